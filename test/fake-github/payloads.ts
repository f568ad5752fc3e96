/**
 * GitHub payloads built from the OpenAPI example templates
 * (openapi-examples.json, written by scripts/extract-github-openapi.mjs): each
 * object starts as a copy of GitHub's example, re-hosted onto the fake's
 * origins, with ids, numbers, urls, timestamps, users and bodies overridden
 * from the project model. Fields GitHub's examples carry that the model has no
 * opinion about keep the example's value.
 */
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { fileBytes, sha256Hex } from './content.js';
import {
  iso, pullOf, type AssetRecord, type BranchRecord, type CommentRecord, type EventRecord, type FakeProject, type IssueRecord, type LabelRecord,
  type MilestoneRecord, type ReleaseRecord, type ReviewCommentRecord, type ReviewRecord, type TeamRecord, type UserRecord, type CollaboratorRecord,
} from './project.js';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type Json = any;

export interface Hosts {
  /** e.g. http://127.0.0.1:PORT/api/v3 */
  apiUrl: string;
  /** e.g. http://127.0.0.1:PORT2 (html_url, attachments, git) */
  webUrl: string;
  /** GitHub Enterprise serves uploads under <origin>/api/uploads. */
  uploadsUrl: string;
  foreignUrl: string;
}

/** Finds a fixture next to this module, or (compiled into dist-test/) in the source tree. */
export function fixturePath(name: string): string {
  const here = dirname(fileURLToPath(import.meta.url));
  for (const candidate of [join(here, name), join(here, '..', '..', '..', 'test', 'fake-github', name)]) if (existsSync(candidate)) return candidate;
  throw new Error(`fixture ${name} not found near ${here}`);
}

export function loadExamples(): Record<string, { method: string; path: string; example: Json }> {
  return (JSON.parse(readFileSync(fixturePath('openapi-examples.json'), 'utf8')) as { operations: Record<string, { method: string; path: string; example: Json }> }).operations;
}

export function nodeId(type: string, id: number): string {
  return Buffer.from(`0${type.length}:${type}${id}`).toString('base64');
}

const REACTIONS = ['+1', '-1', 'laugh', 'confused', 'heart', 'hooray', 'eyes', 'rocket'];
const PERMISSION_FLAGS = { admin: ['pull', 'triage', 'push', 'maintain', 'admin'], maintain: ['pull', 'triage', 'push', 'maintain'], write: ['pull', 'triage', 'push'], triage: ['pull', 'triage'], read: ['pull'] } as const;

export class Payloads {
  private templates: Record<string, string> = {};
  /** GitHub's examples the templates are made from, before re-hosting. */
  private readonly sources: Record<string, Json>;
  /** The `owner/name` the templates and URLs were last made for: a renamed or transferred repository re-hosts them. */
  private home = '';
  private repoApiUrl = '';
  private repoWebUrl = '';
  private readonly bytesCache = new Map<string, Buffer>();
  private derivedVersion = -1;
  private contributors = new Set<string>();
  private milestoneCounts = new Map<number, { open: number; closed: number }>();

  constructor(private readonly project: FakeProject, readonly hosts: Hosts) {
    const examples = loadExamples();
    const ex = (id: string) => (examples[id] as { example: Json }).example;
    this.sources = {
      issue: ex('issues/list-for-repo')[0], issueSingle: ex('issues/get'), comment: ex('issues/list-comments-for-repo')[0], eventRepo: ex('issues/list-events-for-repo')[0],
      eventIssue: ex('issues/list-events')[0], pullSimple: ex('pulls/list')[0], pull: ex('pulls/get'), review: ex('pulls/list-reviews')[0],
      reviewComment: ex('pulls/list-review-comments-for-repo')[0], label: ex('issues/list-labels-for-repo')[0], milestone: ex('issues/list-milestones')[0],
      release: ex('repos/list-releases')[0], asset: ex('repos/list-releases')[0].assets[0], collaborator: ex('repos/list-collaborators')[0], branch: ex('repos/list-branches')[0],
      protection: ex('repos/get-branch-protection'), profile: ex('users/get-by-username'), user: ex('issues/list-for-repo')[0].user, team: ex('pulls/list')[0].requested_teams[0],
      repoFull: ex('repos/get'), repo: ex('pulls/list')[0].head.repo, rate: ex('rate-limit/get'),
    };
    this.rehome();
  }

  private get repoApi(): string {
    this.rehome();
    return this.repoApiUrl;
  }

  private get repoWeb(): string {
    this.rehome();
    return this.repoWebUrl;
  }

  /** Makes the templates and repository URLs for the repository's current `owner/name` (once, and again after a rename or transfer). */
  private rehome(): void {
    const { owner, name } = this.project.repo;
    const full = `${owner}/${name}`;
    if (full === this.home) return;
    this.home = full;
    const { hosts } = this;
    this.repoApiUrl = `${hosts.apiUrl}/repos/${full}`;
    this.repoWebUrl = `${hosts.webUrl}/${full}`;
    const webHost = new URL(hosts.webUrl).host;
    const rehost = (json: string) => json
      .replaceAll('https://api.github.com/repos/octocat/Hello-World', this.repoApiUrl)
      .replaceAll('https://api.github.com/repos/octocat/hello-world', this.repoApiUrl)
      .replaceAll('https://uploads.github.com', hosts.uploadsUrl)
      .replaceAll('https://api.github.com', hosts.apiUrl)
      .replaceAll('git:github.com/octocat/Hello-World.git', `git://${webHost}/${full}.git`)
      .replaceAll('git@github.com:octocat/Hello-World.git', `git@${webHost}:${full}.git`)
      .replaceAll('https://svn.github.com/octocat/Hello-World', this.repoWebUrl)
      .replaceAll('https://github.com/octocat/Hello-World', this.repoWebUrl)
      .replaceAll('https://github.com', hosts.webUrl);
    this.templates = Object.fromEntries(Object.entries(this.sources).map(([key, value]) => [key, rehost(JSON.stringify(value))]));
  }

  private t(name: string): Json {
    this.rehome();
    return JSON.parse(this.templates[name] as string);
  }

  /** Per-version derived data: contributors (authors of merged PRs) and milestone issue counts. */
  private derive(): void {
    if (this.derivedVersion === this.project.version) return;
    this.derivedVersion = this.project.version;
    this.contributors = new Set(this.project.pulls.filter((p) => pullOf(p).merged).map((p) => p.user));
    this.milestoneCounts = new Map();
    for (const issue of this.project.issues) {
      if (issue.milestone === null) continue;
      const counts = this.milestoneCounts.get(issue.milestone) ?? { open: 0, closed: 0 };
      counts[issue.state]++;
      this.milestoneCounts.set(issue.milestone, counts);
    }
  }

  body(text: string | null): string | null {
    return text === null ? null : text.replaceAll('{{web}}', this.hosts.webUrl).replaceAll('{{foreign}}', this.hosts.foreignUrl);
  }

  association(login: string): string {
    this.derive();
    const user = this.project.displayUser(login);
    if (user.login === this.project.repo.owner) return 'OWNER';
    const collaborator = this.project.collaborators.find((c) => c.login === user.login);
    if (collaborator) return collaborator.permission === 'admin' ? 'MEMBER' : 'COLLABORATOR';
    return this.contributors.has(user.login) ? 'CONTRIBUTOR' : 'NONE';
  }

  reactions(url: string): Json {
    return Object.fromEntries([['url', `${url}/reactions`], ['total_count', 0], ...REACTIONS.map((r) => [r, 0])]);
  }

  user(login: string): Json {
    return this.userFrom(this.t('user'), this.project.displayUser(login));
  }

  private userFrom(o: Json, u: UserRecord): Json {
    const { apiUrl, webUrl } = this.hosts;
    const path = encodeURIComponent(u.login);
    const api = `${apiUrl}/users/${path}`;
    Object.assign(o, {
      login: u.login, id: u.id, node_id: nodeId(u.type === 'Organization' ? 'Organization' : u.type === 'Bot' ? 'Bot' : 'User', u.id),
      avatar_url: `${webUrl}/avatars/u/${u.id}?v=4`, gravatar_id: '', url: api,
      html_url: u.type === 'Bot' ? `${webUrl}/apps/${u.login.replace(/\[bot\]$/, '')}` : `${webUrl}/${path}`,
      followers_url: `${api}/followers`, following_url: `${api}/following{/other_user}`, gists_url: `${api}/gists{/gist_id}`,
      starred_url: `${api}/starred{/owner}{/repo}`, subscriptions_url: `${api}/subscriptions`, organizations_url: `${api}/orgs`, repos_url: `${api}/repos`,
      events_url: `${api}/events{/privacy}`, received_events_url: `${api}/received_events`, type: u.type, site_admin: u.siteAdmin,
    });
    return o;
  }

  profile(u: UserRecord): Json {
    const o = this.userFrom(this.t('profile'), u);
    Object.assign(o, {
      name: u.name, company: null, blog: '', location: null, email: null, hireable: null, bio: null, twitter_username: null,
      public_repos: 1 + (u.id % 7), public_gists: u.id % 3, followers: u.id % 11, following: u.id % 5, created_at: iso(u.createdAt), updated_at: iso(u.createdAt),
    });
    return o;
  }

  team(slug: string): Json {
    const team = this.project.team(slug) as TeamRecord;
    const o = this.t('team');
    const url = `${this.hosts.apiUrl}/organizations/${this.project.users.get(this.project.repo.owner)?.id ?? 1}/team/${team.id}`;
    Object.assign(o, {
      id: team.id, node_id: nodeId('Team', team.id), url, html_url: `${this.hosts.webUrl}/orgs/${this.project.repo.owner}/teams/${team.slug}`, name: team.name, slug: team.slug,
      description: team.description, privacy: 'closed', permission: team.permission, members_url: `${url}/members{/member}`, repositories_url: `${url}/repos`, parent: null, type: 'organization',
    });
    return o;
  }

  label(l: LabelRecord): Json {
    return Object.assign(this.t('label'), { id: l.id, node_id: nodeId('Label', l.id), url: `${this.repoApi}/labels/${encodeURIComponent(l.name)}`, name: l.name, description: l.description, color: l.color, default: l.isDefault });
  }

  milestone(m: MilestoneRecord): Json {
    this.derive();
    const counts = this.milestoneCounts.get(m.number) ?? { open: 0, closed: 0 };
    const url = `${this.repoApi}/milestones/${m.number}`;
    return Object.assign(this.t('milestone'), {
      url, html_url: `${this.repoWeb}/milestone/${m.number}`, labels_url: `${url}/labels`, id: m.id, node_id: nodeId('Milestone', m.id), number: m.number, state: m.state, title: m.title,
      description: m.description, creator: this.user(m.creator), open_issues: counts.open, closed_issues: counts.closed, created_at: iso(m.createdAt), updated_at: iso(m.updatedAt),
      closed_at: m.closedAt === null ? null : iso(m.closedAt), due_on: m.dueOn === null ? null : iso(m.dueOn),
    });
  }

  private labelsOf(issue: IssueRecord): Json[] {
    return issue.labels.map((name) => this.project.label(name)).filter((l): l is LabelRecord => l !== undefined).map((l) => this.label(l));
  }

  /** An issue (pull requests too, with a `pull_request` key): `list`/`single` as the issues endpoints, `embedded` as inside repo-wide events. */
  issue(issue: IssueRecord, mode: 'list' | 'single' | 'embedded' = 'list'): Json {
    const o = this.t(mode === 'single' ? 'issueSingle' : 'issue');
    const url = `${this.repoApi}/issues/${issue.number}`;
    const milestone = this.project.milestone(issue.milestone);
    Object.assign(o, {
      id: issue.id, node_id: issue.pull ? nodeId('PullRequest', issue.pull.id) : nodeId('Issue', issue.id), url, repository_url: this.repoApi, labels_url: `${url}/labels{/name}`,
      comments_url: `${url}/comments`, events_url: `${url}/events`, html_url: `${this.repoWeb}/${issue.pull ? 'pull' : 'issues'}/${issue.number}`, number: issue.number,
      state: issue.state, title: issue.title, body: this.body(issue.body), user: this.user(issue.user), pinned_comment: null, labels: this.labelsOf(issue),
      assignee: issue.assignees[0] === undefined ? null : this.user(issue.assignees[0]), assignees: issue.assignees.map((a) => this.user(a)),
      milestone: milestone ? this.milestone(milestone) : null, locked: issue.locked, active_lock_reason: issue.lockReason, comments: issue.comments,
      closed_at: issue.closedAt === null ? null : iso(issue.closedAt), created_at: iso(issue.createdAt), updated_at: iso(issue.updatedAt),
      closed_by: issue.closedBy === null ? null : this.user(issue.closedBy), author_association: this.association(issue.user), state_reason: issue.stateReason,
      timeline_url: `${url}/timeline`, performed_via_github_app: null, reactions: this.reactions(url),
    });
    if (issue.pull) {
      const pullUrl = `${this.repoWeb}/pull/${issue.number}`;
      o.pull_request = { url: `${this.repoApi}/pulls/${issue.number}`, html_url: pullUrl, diff_url: `${pullUrl}.diff`, patch_url: `${pullUrl}.patch`, merged_at: issue.pull.mergedAt === null ? null : iso(issue.pull.mergedAt) };
      o.draft = issue.pull.draft;
    } else {
      delete o.pull_request;
    }
    if (mode === 'embedded') delete o.closed_by;
    return o;
  }

  repository(full: boolean): Json {
    const r = this.project.repo;
    const o = this.t(full ? 'repoFull' : 'repo');
    const openCount = this.project.issues.filter((i) => i.state === 'open').length;
    Object.assign(o, {
      id: r.id, node_id: nodeId('Repository', r.id), name: r.name, full_name: `${r.owner}/${r.name}`, owner: this.user(r.owner), private: false, html_url: this.repoWeb,
      description: r.description, fork: false, url: this.repoApi, clone_url: `${this.repoWeb}.git`, mirror_url: null, homepage: null, language: 'TypeScript',
      default_branch: r.defaultBranch, open_issues_count: openCount, open_issues: openCount, has_issues: true, has_wiki: r.hasWiki, has_projects: true, has_pages: false,
      has_downloads: true, archived: false, disabled: false, visibility: 'public', pushed_at: iso(r.pushedAt), created_at: iso(r.createdAt), updated_at: iso(r.updatedAt),
      topics: ['forgesync', 'fake'], permissions: { admin: true, maintain: true, push: true, triage: true, pull: true }, template_repository: null,
    });
    if (full) {
      delete o.parent;
      delete o.source;
      delete o.temp_clone_token;
      if (this.project.users.get(r.owner)?.type === 'Organization') o.organization = this.user(r.owner);
      else delete o.organization;
    }
    return o;
  }

  pull(issue: IssueRecord, mode: 'list' | 'single', repo: Json): Json {
    const p = pullOf(issue);
    const o = this.t(mode === 'single' ? 'pull' : 'pullSimple');
    const n = issue.number;
    const url = `${this.repoApi}/pulls/${n}`;
    const html = `${this.repoWeb}/pull/${n}`;
    const headSha = this.project.shaOf(`pr:${n}:head`);
    const milestone = this.project.milestone(issue.milestone);
    const owner = this.project.repo.owner;
    Object.assign(o, {
      url, id: p.id, node_id: nodeId('PullRequest', p.id), html_url: html, diff_url: `${html}.diff`, patch_url: `${html}.patch`, issue_url: `${this.repoApi}/issues/${n}`,
      commits_url: `${url}/commits`, review_comments_url: `${url}/comments`, review_comment_url: `${this.repoApi}/pulls/comments{/number}`, comments_url: `${this.repoApi}/issues/${n}/comments`,
      statuses_url: `${this.repoApi}/statuses/${headSha}`, number: n, state: issue.state, locked: issue.locked, title: issue.title, user: this.user(issue.user), body: this.body(issue.body),
      labels: this.labelsOf(issue), milestone: milestone ? this.milestone(milestone) : null, active_lock_reason: issue.lockReason, created_at: iso(issue.createdAt),
      updated_at: iso(issue.updatedAt), closed_at: issue.closedAt === null ? null : iso(issue.closedAt), merged_at: p.mergedAt === null ? null : iso(p.mergedAt),
      merge_commit_sha: p.merged ? this.project.shaOf(`pr:${n}:merge`) : null, assignee: issue.assignees[0] === undefined ? null : this.user(issue.assignees[0]),
      assignees: issue.assignees.map((a) => this.user(a)), requested_reviewers: p.requestedReviewers.map((login) => this.user(login)), requested_teams: p.requestedTeams.map((slug) => this.team(slug)),
      head: { label: `${owner}:${p.headRef}`, ref: p.headRef, sha: headSha, user: this.user(owner), repo },
      base: { label: `${owner}:${p.baseRef}`, ref: p.baseRef, sha: this.project.shaOf(p.baseKey), user: this.user(owner), repo },
      _links: {
        self: { href: url }, html: { href: html }, issue: { href: `${this.repoApi}/issues/${n}` }, comments: { href: `${this.repoApi}/issues/${n}/comments` },
        review_comments: { href: `${url}/comments` }, review_comment: { href: `${this.repoApi}/pulls/comments{/number}` }, commits: { href: `${url}/commits` }, statuses: { href: `${this.repoApi}/statuses/${headSha}` },
      },
      author_association: this.association(issue.user), auto_merge: null, draft: p.draft,
    });
    if (mode === 'single') {
      const open = issue.state === 'open';
      Object.assign(o, {
        merged: p.merged, mergeable: open ? true : null, rebaseable: open ? true : null, mergeable_state: open ? (p.draft ? 'draft' : 'clean') : 'unknown',
        merged_by: p.mergedBy === null ? null : this.user(p.mergedBy), comments: issue.comments, review_comments: this.project.reviewCommentsByPull.get(n)?.length ?? 0,
        maintainer_can_modify: false, commits: p.commits, additions: p.additions, deletions: p.deletions, changed_files: p.changedFiles,
      });
    } else {
      for (const key of ['merged', 'mergeable', 'rebaseable', 'mergeable_state', 'merged_by', 'comments', 'review_comments', 'maintainer_can_modify', 'commits', 'additions', 'deletions', 'changed_files']) delete o[key];
    }
    return o;
  }

  comment(c: CommentRecord): Json {
    const issue = this.project.issue(c.issue);
    const url = `${this.repoApi}/issues/comments/${c.id}`;
    return Object.assign(this.t('comment'), {
      id: c.id, node_id: nodeId('IssueComment', c.id), url, html_url: `${this.repoWeb}/${issue.pull ? 'pull' : 'issues'}/${c.issue}#issuecomment-${c.id}`, body: this.body(c.body),
      user: this.user(c.user), created_at: iso(c.createdAt), updated_at: iso(c.updatedAt), issue_url: `${this.repoApi}/issues/${c.issue}`,
      author_association: this.association(c.user), performed_via_github_app: null, reactions: this.reactions(url),
    });
  }

  reviewComment(c: ReviewCommentRecord): Json {
    const o = this.t('reviewComment');
    const url = `${this.repoApi}/pulls/comments/${c.id}`;
    const html = `${this.repoWeb}/pull/${c.pull}#discussion_r${c.id}`;
    const pullUrl = `${this.repoApi}/pulls/${c.pull}`;
    const sha = this.project.shaOf(`pr:${c.pull}:head`);
    Object.assign(o, {
      url, pull_request_review_id: c.reviewId, id: c.id, node_id: nodeId('PullRequestReviewComment', c.id), diff_hunk: `@@ -${c.line},3 +${c.line},4 @@ export function widget() {\n+  // change`,
      path: c.path, position: 4, original_position: 4, commit_id: sha, original_commit_id: sha, in_reply_to_id: c.inReplyTo, user: this.user(c.user), body: this.body(c.body),
      created_at: iso(c.createdAt), updated_at: iso(c.updatedAt), html_url: html, pull_request_url: pullUrl, author_association: this.association(c.user),
      _links: { self: { href: url }, html: { href: html }, pull_request: { href: pullUrl } }, start_line: null, original_start_line: null, start_side: null,
      line: c.line, original_line: c.line, side: c.side, subject_type: 'line', reactions: this.reactions(url),
    });
    if (c.inReplyTo === null) delete o.in_reply_to_id;
    return o;
  }

  review(r: ReviewRecord): Json {
    const html = `${this.repoWeb}/pull/${r.pull}#pullrequestreview-${r.id}`;
    const pullUrl = `${this.repoApi}/pulls/${r.pull}`;
    return Object.assign(this.t('review'), {
      id: r.id, node_id: nodeId('PullRequestReview', r.id), user: this.user(r.user), body: this.body(r.body), state: r.state, html_url: html, pull_request_url: pullUrl,
      _links: { html: { href: html }, pull_request: { href: pullUrl } }, submitted_at: iso(r.submittedAt), commit_id: this.project.shaOf(`pr:${r.pull}:head`), author_association: this.association(r.user),
    });
  }

  /** An issue event: `repo` (GET /issues/events, with the issue embedded) or `issue` (GET /issues/{n}/events). */
  event(e: EventRecord, scope: 'repo' | 'issue'): Json {
    const o = this.t(scope === 'repo' ? 'eventRepo' : 'eventIssue');
    const sha = e.commit === null ? null : this.project.shaOf(e.commit);
    Object.assign(o, {
      id: e.id, node_id: nodeId('IssueEvent', e.id), url: `${this.repoApi}/issues/events/${e.id}`, actor: this.user(e.actor), event: e.event, commit_id: sha,
      commit_url: sha === null ? null : `${this.repoApi}/commits/${sha}`, created_at: iso(e.createdAt), performed_via_github_app: null,
    });
    delete o.label;
    if (e.label) o.label = { ...e.label };
    if (e.assignee !== undefined) Object.assign(o, { assignee: this.user(e.assignee), assigner: this.user(e.actor) });
    if (e.milestone !== undefined) o.milestone = { title: e.milestone };
    if (e.requestedReviewer !== undefined) Object.assign(o, { review_requester: this.user(e.actor), requested_reviewer: this.user(e.requestedReviewer) });
    if (e.requestedTeam !== undefined) Object.assign(o, { review_requester: this.user(e.actor), requested_team: this.team(e.requestedTeam) });
    if (e.rename) o.rename = { ...e.rename };
    if (e.lockReason !== undefined) o.lock_reason = e.lockReason;
    if (scope === 'repo') o.issue = this.issue(this.project.issue(e.issue), 'embedded');
    return o;
  }

  assetBytes(a: AssetRecord): Buffer {
    return this.bytes(`asset:${a.id}:${a.name}`, a.contentType, a.size);
  }

  bytes(seed: string, contentType: string, size: number): Buffer {
    let bytes = this.bytesCache.get(seed);
    if (!bytes) {
      bytes = fileBytes(contentType, seed, size);
      this.bytesCache.set(seed, bytes);
    }
    return bytes;
  }

  /** A draft's web URLs name it `untagged-<hex>` (its tag does not exist yet), as GitHub's do. */
  releaseWebTag(release: ReleaseRecord): string {
    return release.draft ? `untagged-${sha256Hex(Buffer.from(`draft:${release.id}`)).slice(0, 20)}` : release.tag;
  }

  /** `browser_download_url`: on the web host, which answers 404 for a draft's assets (see web.ts). */
  assetDownloadUrl(release: ReleaseRecord, a: AssetRecord): string {
    return `${this.repoWeb}/releases/download/${encodeURIComponent(this.releaseWebTag(release))}/${encodeURIComponent(a.name)}`;
  }

  /** The signature of an asset's storage URL (what GitHub's storage checks instead of a token). */
  assetSignature(a: AssetRecord): string {
    return sha256Hex(Buffer.from(`storage:${a.id}:${a.name}`));
  }

  /**
   * Where the API's asset endpoint sends `Accept: application/octet-stream`
   * (302), for every release, drafts included: a signed, short-lived storage
   * URL like GitHub's (S3-style query signature; web.ts refuses it with an
   * Authorization header too, as S3 does).
   */
  assetStorageUrl(a: AssetRecord): string {
    const query = new URLSearchParams({ 'X-Amz-Algorithm': 'AWS4-HMAC-SHA256', 'X-Amz-Expires': '300', 'X-Amz-Signature': this.assetSignature(a) });
    return `${this.hosts.webUrl}/_storage/releases/${a.id}/${encodeURIComponent(a.name)}?${query}`;
  }

  asset(release: ReleaseRecord, a: AssetRecord): Json {
    const bytes = this.assetBytes(a);
    return Object.assign(this.t('asset'), {
      url: `${this.repoApi}/releases/assets/${a.id}`, browser_download_url: this.assetDownloadUrl(release, a), id: a.id, node_id: nodeId('ReleaseAsset', a.id), name: a.name, label: a.label,
      state: 'uploaded', content_type: a.contentType, size: bytes.length, digest: `sha256:${sha256Hex(bytes)}`, download_count: a.downloadCount, created_at: iso(a.createdAt),
      updated_at: iso(a.updatedAt), uploader: this.user(a.uploader),
    });
  }

  release(r: ReleaseRecord): Json {
    const url = `${this.repoApi}/releases/${r.id}`;
    return Object.assign(this.t('release'), {
      url, html_url: `${this.repoWeb}/releases/tag/${encodeURIComponent(this.releaseWebTag(r))}`, assets_url: `${url}/assets`,
      upload_url: `${this.hosts.uploadsUrl}/repos/${this.project.repo.owner}/${this.project.repo.name}/releases/${r.id}/assets{?name,label}`,
      tarball_url: `${this.repoApi}/tarball/${r.tag}`, zipball_url: `${this.repoApi}/zipball/${r.tag}`, id: r.id, node_id: nodeId('Release', r.id), tag_name: r.tag,
      target_commitish: r.targetCommitish, name: r.name, body: this.body(r.body), draft: r.draft, prerelease: r.prerelease, immutable: false, created_at: iso(r.createdAt),
      published_at: r.publishedAt === null ? null : iso(r.publishedAt), author: this.user(r.author), assets: r.assets.map((a) => this.asset(r, a)),
    });
  }

  collaborator(c: CollaboratorRecord): Json {
    const o = this.userFrom(this.t('collaborator'), this.project.displayUser(c.login));
    const flags: readonly string[] = PERMISSION_FLAGS[c.permission];
    o.permissions = Object.fromEntries(['pull', 'triage', 'push', 'maintain', 'admin'].map((k) => [k, flags.includes(k)]));
    o.role_name = c.permission;
    return o;
  }

  branchSha(b: BranchRecord): string {
    return this.project.shaOf(b.commit === 'main' ? this.project.mainTipKey() : b.commit);
  }

  branch(b: BranchRecord): Json {
    const o = this.t('branch');
    const sha = this.branchSha(b);
    const p = b.protection;
    Object.assign(o, {
      name: b.name, commit: { sha, url: `${this.repoApi}/commits/${sha}` }, protected: p !== null,
      protection: p === null
        ? { enabled: false, required_status_checks: { enforcement_level: 'off', contexts: [], checks: [] } }
        : { enabled: true, required_status_checks: { enforcement_level: p.enforceAdmins ? 'everyone' : 'non_admins', contexts: [...p.requiredStatusChecks], checks: p.requiredStatusChecks.map((context) => ({ context, app_id: null })) } },
      protection_url: `${this.repoApi}/branches/${encodeURIComponent(b.name)}/protection`,
    });
    return o;
  }

  protection(b: BranchRecord): Json {
    const p = b.protection;
    if (p === null) throw new Error(`${b.name} is not protected`);
    const o = this.t('protection');
    const url = `${this.repoApi}/branches/${encodeURIComponent(b.name)}/protection`;
    o.url = url;
    o.required_status_checks = {
      url: `${url}/required_status_checks`, strict: p.strict, contexts: [...p.requiredStatusChecks], checks: p.requiredStatusChecks.map((context) => ({ context, app_id: null })),
      contexts_url: `${url}/required_status_checks/contexts`, enforcement_level: p.enforceAdmins ? 'everyone' : 'non_admins',
    };
    o.enforce_admins = { url: `${url}/enforce_admins`, enabled: p.enforceAdmins };
    const reviews = o.required_pull_request_reviews;
    delete reviews.dismissal_restrictions;
    Object.assign(reviews, { url: `${url}/required_pull_request_reviews`, dismiss_stale_reviews: p.dismissStaleReviews, require_code_owner_reviews: p.requireCodeOwners, required_approving_review_count: p.requiredApprovals, require_last_push_approval: false });
    if (p.restrictions === null) {
      delete o.restrictions;
    } else {
      const r = `${url}/restrictions`;
      o.restrictions = { url: r, users_url: `${r}/users`, teams_url: `${r}/teams`, apps_url: `${r}/apps`, users: p.restrictions.users.map((login) => this.user(login)), teams: p.restrictions.teams.map((slug) => this.team(slug)), apps: [] };
    }
    o.required_linear_history = { enabled: p.linearHistory };
    o.allow_force_pushes = { enabled: p.allowForcePushes };
    o.allow_deletions = { enabled: p.allowDeletions };
    o.required_conversation_resolution = { enabled: p.conversationResolution };
    o.lock_branch = { enabled: false };
    o.allow_fork_syncing = { enabled: false };
    return o;
  }

  rateLimit(core: { limit: number; used: number; remaining: number; reset: number }): Json {
    const o = this.t('rate');
    const later = Math.floor(Date.now() / 1000) + 3600;
    for (const resource of Object.values(o.resources) as Json[]) Object.assign(resource, { used: 0, remaining: resource.limit, reset: later });
    o.resources.core = { ...core };
    o.rate = { ...core };
    return o;
  }
}
