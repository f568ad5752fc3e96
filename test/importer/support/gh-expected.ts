import type { FakeGitHub, FakeProject, IssueRecord, ReleaseRecord } from '../../fake-github/index.js';

/*
 * What gh prints for the fake's records, in a shape both sides are brought
 * to before comparing: gh's `--json` output (`issueFromGh`, `pullFromGh`)
 * and the fake GitHub's project records (`expectedIssue`, `expectedPull`,
 * `expectedReleaseLine`). Logins stand for users, label names for labels,
 * the milestone's title for the milestone; times are GitHub's (RFC 3339,
 * whole seconds, UTC); links are the forge's web pages (`html_url`), which
 * the copy keeps pointing at the fake's web host.
 */

/** A time of the fake's records (ms) as GitHub and gh write it: `2019-01-07T08:00:10Z`. */
export function githubTime(ms: number): string {
  return new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z');
}

export interface IssueAsGhShows {
  number: number;
  title: string;
  state: string;
  body: string;
  author: string;
  labels: string[];
  assignees: string[];
  milestone: string | null;
  comments: Array<{ author: string; body: string }>;
  createdAt: string;
  updatedAt: string;
  url: string;
}

export interface PullAsGhShows extends IssueAsGhShows {
  headRefName: string;
  baseRefName: string;
  isDraft: boolean;
  closedAt: string | null;
  mergedAt: string | null;
  reviews: Array<{ author: string; state: string; body: string }>;
}

/** gh's JSON output, read field by field (a wrong shape shows up as a failed comparison). */
type GhJson = any;

/** gh's zero time (a Go `time.Time` never set) and null both mean "none". */
function ghTimeOrNull(value: unknown): string | null {
  return typeof value === 'string' && !value.startsWith('0001-01-01') ? value : null;
}

/** One `gh issue list|view --json number,title,labels,state,author,assignees,milestone,comments,createdAt,updatedAt,url,body` item, normalised. */
export function issueFromGh(item: GhJson): IssueAsGhShows {
  return {
    number: item.number,
    title: item.title,
    state: item.state,
    body: item.body,
    author: item.author?.login,
    labels: (item.labels as GhJson[]).map((label) => label.name as string).sort(),
    assignees: (item.assignees as GhJson[]).map((user) => user.login as string).sort(),
    milestone: item.milestone?.title ? (item.milestone.title as string) : null,
    comments: (item.comments as GhJson[]).map((comment) => ({ author: comment.author?.login, body: comment.body })),
    createdAt: item.createdAt,
    updatedAt: item.updatedAt,
    url: item.url,
  };
}

/** One `gh pr list|view --json …` item (the fields of gh-commands.ts PULL_FIELDS), normalised. */
export function pullFromGh(item: GhJson): PullAsGhShows {
  return {
    ...issueFromGh(item),
    headRefName: item.headRefName,
    baseRefName: item.baseRefName,
    isDraft: item.isDraft,
    closedAt: ghTimeOrNull(item.closedAt),
    mergedAt: ghTimeOrNull(item.mergedAt),
    reviews: (item.reviews as GhJson[]).map((review) => ({ author: review.author?.login, state: review.state, body: review.body })),
  };
}

/** The login GitHub shows for `login` (`ghost` for a deleted account). */
function shownLogin(project: FakeProject, login: string): string {
  return project.displayUser(login).login;
}

/** The forge's web page of an issue or pull request, as the fake's `html_url`. */
export function webPage(fake: FakeGitHub, issue: IssueRecord): string {
  const { owner, name } = fake.project.repo;
  return `${fake.webUrl}/${owner}/${name}/${issue.pull ? 'pull' : 'issues'}/${issue.number}`;
}

export function expectedIssue(fake: FakeGitHub, issue: IssueRecord): IssueAsGhShows {
  const project = fake.project;
  return {
    number: issue.number,
    title: issue.title,
    state: issue.pull?.merged ? 'MERGED' : issue.state.toUpperCase(),
    body: fake.payloads.body(issue.body) ?? '',
    author: shownLogin(project, issue.user),
    labels: [...issue.labels].sort(),
    assignees: issue.assignees.map((login) => shownLogin(project, login)).sort(),
    milestone: issue.milestone === null ? null : (project.milestone(issue.milestone)?.title ?? null),
    comments: (project.commentsByIssue.get(issue.number) ?? []).map((comment) => ({ author: shownLogin(project, comment.user), body: fake.payloads.body(comment.body) ?? '' })),
    createdAt: githubTime(issue.createdAt),
    updatedAt: githubTime(issue.updatedAt),
    url: webPage(fake, issue),
  };
}

export function expectedPull(fake: FakeGitHub, issue: IssueRecord): PullAsGhShows {
  const pull = issue.pull;
  if (pull === null) throw new Error(`#${issue.number} is not a pull request`);
  return {
    ...expectedIssue(fake, issue),
    headRefName: pull.headRef,
    baseRefName: pull.baseRef,
    isDraft: pull.draft,
    closedAt: issue.closedAt === null ? null : githubTime(issue.closedAt),
    mergedAt: pull.mergedAt === null ? null : githubTime(pull.mergedAt),
    reviews: (fake.project.reviewsByPull.get(issue.number) ?? []).map((review) => ({ author: shownLogin(fake.project, review.user), state: review.state, body: review.body })),
  };
}

/**
 * The releases as `gh release list` prints them without a terminal, newest
 * created first: `name<TAB>badge<TAB>tag<TAB>published (created for a draft)`,
 * the badge `Latest` for the newest published full release, else `Draft` or
 * `Pre-release` or nothing.
 */
export function expectedReleaseLines(releases: readonly ReleaseRecord[]): string[] {
  const newestFirst = [...releases].sort((a, b) => b.createdAt - a.createdAt);
  const latest = newestFirst.find((release) => !release.draft && !release.prerelease);
  return newestFirst.map((release) => {
    const badge = release === latest ? 'Latest' : release.draft ? 'Draft' : release.prerelease ? 'Pre-release' : '';
    return [release.name, badge, release.tag, githubTime(release.publishedAt ?? release.createdAt)].join('\t');
  });
}
