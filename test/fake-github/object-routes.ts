/**
 * The fake GitHub's single-object routes of a repository and the lists made
 * from one object (paths after `/repos/{o}/{r}` or `/repositories/{id}`): a
 * milestone, a label by name, a release (by id, by tag, the latest), a
 * review, an issue's labels and its timeline; and where GitHub's error
 * bodies point for every repository route (`documentation_url`), and what a
 * missing issue number answers (410 once deleted).
 */
import type { Json, Payloads } from './payloads.js';
import type { FakeProject, IssueRecord, LabelRecord } from './project.js';
import type { Answer, Route } from './routes.js';

const DOCS = 'https://docs.github.com/enterprise-server@3.17/rest';

/** The documentation page of each repository route, by the fake's path kind (GitHub links the operation asked for). */
const DOCS_BY_KIND: Record<string, string> = {
  repo: 'repos/repos#get-a-repository',
  issues: 'issues/issues#list-repository-issues',
  repo_issue_comments: 'issues/comments#list-issue-comments-for-a-repository',
  repo_issue_events: 'issues/events#list-issue-events-for-a-repository',
  issue_comment: 'issues/comments#get-an-issue-comment',
  issue_event: 'issues/events#get-an-issue-event',
  issue: 'issues/issues#get-an-issue',
  issue_comments: 'issues/comments#list-issue-comments',
  issue_events: 'issues/events#list-issue-events',
  issue_labels: 'issues/labels#list-labels-for-an-issue',
  timeline: 'issues/timeline#list-timeline-events-for-an-issue',
  pulls: 'pulls/pulls#list-pull-requests',
  repo_review_comments: 'pulls/comments#list-review-comments-in-a-repository',
  review_comment: 'pulls/comments#get-a-review-comment-for-a-pull-request',
  pull: 'pulls/pulls#get-a-pull-request',
  pull_review_comments: 'pulls/comments#list-review-comments-on-a-pull-request',
  reviews: 'pulls/reviews#list-reviews-for-a-pull-request',
  review: 'pulls/reviews#get-a-review-for-a-pull-request',
  requested_reviewers: 'pulls/review-requests#get-all-requested-reviewers-for-a-pull-request',
  labels: 'issues/labels#list-labels-for-a-repository',
  label: 'issues/labels#get-a-label',
  milestones: 'issues/milestones#list-milestones',
  milestone: 'issues/milestones#get-a-milestone',
  releases: 'releases/releases#list-releases',
  latest_release: 'releases/releases#get-the-latest-release',
  release: 'releases/releases#get-a-release',
  release_by_tag: 'releases/releases#get-a-release-by-tag-name',
  release_asset: 'releases/assets#get-a-release-asset',
  collaborators: 'collaborators/collaborators#list-repository-collaborators',
  branch_protection: 'branches/branch-protection#get-branch-protection',
};

/** The `documentation_url` of a repository route's errors, by its path kind (GitHub's REST root when unlisted). */
export function docsOf(pathKind: string | undefined): string {
  const page = pathKind === undefined ? undefined : DOCS_BY_KIND[pathKind];
  return page === undefined ? DOCS : `${DOCS}/${page}`;
}

function missing(pathKind: string, message = 'Not Found'): Answer {
  return { kind: 'error', status: 404, message, doc: docsOf(pathKind) };
}

/**
 * What an issue number without an issue answers: 410 `This issue was
 * deleted` when it is below the highest number handed out (the number
 * existed), else 404; `documentation_url` that of `pathKind`.
 */
export function missingIssue(project: FakeProject, number: number, pathKind: string): Answer {
  return number <= project.highestNumber ? { kind: 'error', status: 410, message: 'This issue was deleted', doc: docsOf(pathKind) } : missing(pathKind);
}

/**
 * What a former `owner/name` of the repository answers: 301 with `Location`
 * (and `url` in the body) naming the same path and query under
 * `/repositories/{id}`, as GitHub answers after a rename or transfer.
 */
export function movedRoute(project: FakeProject, apiUrl: string, rest: string): Route {
  return {
    pathKind: 'repo_moved',
    run: (query) => {
      const search = query.toString();
      const url = `${apiUrl}/repositories/${project.repo.id}${rest}${search ? `?${search}` : ''}`;
      const body = Buffer.from(JSON.stringify({ message: 'Moved Permanently', url, documentation_url: `${DOCS}/guides/best-practices-for-using-the-rest-api#follow-redirects` }));
      return { kind: 'raw', status: 301, headers: { location: url, 'content-type': 'application/json; charset=utf-8' }, body };
    },
  };
}

/** A timeline entry: the rendered item and what orders it (time, then events < comments < reviews, then id). */
interface TimelineEntry {
  at: number;
  rank: number;
  id: number;
  item: Json;
}

/**
 * GitHub's timeline of an issue or pull request as far as the model has it:
 * its events (per-issue shape), comments (`event: "commented"`, the author as
 * `actor`) and reviews (`event: "reviewed"`, state in lower case), oldest first.
 */
export function timeline(project: FakeProject, payloads: Payloads, issue: IssueRecord): Json[] {
  const n = issue.number;
  const entries: TimelineEntry[] = [
    ...(project.eventsByIssue.get(n) ?? []).map((e) => ({ at: e.createdAt, rank: 0, id: e.id, item: payloads.event(e, 'issue') })),
    ...(project.commentsByIssue.get(n) ?? []).map((c) => ({ at: c.createdAt, rank: 1, id: c.id, item: { ...payloads.comment(c), event: 'commented', actor: payloads.user(c.user) } })),
    ...(project.reviewsByPull.get(n) ?? []).map((r) => ({ at: r.submittedAt, rank: 2, id: r.id, item: { ...payloads.review(r), event: 'reviewed', state: r.state.toLowerCase() } })),
  ];
  entries.sort((a, b) => a.at - b.at || a.rank - b.rank || a.id - b.id);
  return entries.map((entry) => entry.item);
}

function list(items: readonly Json[]): Answer {
  return { kind: 'list', items, render: ((item: Json) => item) as (item: never) => Json, capped: false };
}

/** The route of `rest` when it is one of this module's, else undefined. */
export function singleObjectRoute(project: FakeProject, payloads: Payloads, rest: string): Route | undefined {
  const p = project;
  const pl = payloads;
  let m: RegExpExecArray | null;
  if ((m = /^\/milestones\/(\d+)$/.exec(rest))) {
    const n = Number(m[1]);
    return { pathKind: 'milestone', run: () => { const x = p.milestone(n); return x ? { kind: 'object', body: pl.milestone(x), lastModified: x.updatedAt } : missing('milestone'); } };
  }
  if ((m = /^\/labels\/([^/]+)$/.exec(rest))) {
    const name = decodeURIComponent(m[1] as string).toLowerCase();
    return { pathKind: 'label', run: () => { const l = p.labels.find((x) => x.name.toLowerCase() === name); return l ? { kind: 'object', body: pl.label(l) } : missing('label'); } };
  }
  if (rest === '/releases/latest') {
    return {
      pathKind: 'latest_release',
      run: () => {
        let latest: (typeof p.releases)[number] | undefined;
        for (const r of p.releases) if (!r.draft && !r.prerelease && (latest === undefined || r.createdAt >= latest.createdAt)) latest = r;
        return latest ? { kind: 'object', body: pl.release(latest) } : missing('latest_release');
      },
    };
  }
  if ((m = /^\/releases\/tags\/(.+)$/.exec(rest))) {
    const tag = decodeURIComponent(m[1] as string);
    return { pathKind: 'release_by_tag', run: () => { const r = p.releases.find((x) => !x.draft && x.tag === tag); return r ? { kind: 'object', body: pl.release(r) } : missing('release_by_tag'); } };
  }
  if ((m = /^\/releases\/(\d+)$/.exec(rest))) {
    const id = Number(m[1]);
    // Drafts are seen by those with push access: here, any token.
    return { pathKind: 'release', run: (_q, ctx) => { const r = p.releases.find((x) => x.id === id && (!x.draft || ctx.tokenIndex >= 0)); return r ? { kind: 'object', body: pl.release(r) } : missing('release'); } };
  }
  if ((m = /^\/pulls\/(\d+)\/reviews\/(\d+)$/.exec(rest))) {
    const [n, id] = [Number(m[1]), Number(m[2])];
    return { pathKind: 'review', run: () => { const r = p.reviewsByPull.get(n)?.find((x) => x.id === id); return r ? { kind: 'object', body: pl.review(r) } : missing('review'); } };
  }
  if ((m = /^\/issues\/(\d+)\/(labels|timeline)$/.exec(rest))) {
    const n = Number(m[1]);
    const kind = m[2] === 'labels' ? 'issue_labels' : 'timeline';
    return {
      pathKind: kind,
      run: () => {
        const issue = p.byNumber.get(n);
        if (!issue) return missingIssue(p, n, kind);
        if (kind === 'timeline') return list(timeline(p, pl, issue));
        return list(issue.labels.map((name) => p.label(name)).filter((l): l is LabelRecord => l !== undefined).map((l) => pl.label(l)));
      },
    };
  }
  return undefined;
}
