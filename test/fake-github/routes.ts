/**
 * The REST routes of the fake GitHub (paths after `/api/v3`): matching, the
 * filters and sort orders GitHub documents, and which payload renders each
 * record. Lists are answered as sorted/filtered record arrays (cached per query
 * and project version); the server paginates and renders only the page asked for.
 */
import type { Payloads, Json } from './payloads.js';
import { pullOf, type FakeProject, type IssueRecord } from './project.js';
import type { RateState } from './limits.js';
import { DIRECTIONS, PERMISSIONS, STATES, mentions, monthBefore, refused } from './list-filters.js';
import { FakeGitData } from './git-data.js';
import { FakeGitReader } from './git-read.js';
import { docsOf, missingIssue, movedRoute, singleObjectRoute } from './object-routes.js';

export type Answer =
  | { kind: 'list'; items: readonly unknown[]; render: (item: never) => Json; capped: boolean }
  | { kind: 'object'; body: Json; lastModified?: number }
  | { kind: 'error'; status: number; message: string; doc: string }
  | { kind: 'redirect'; location: string }
  /** Bytes as they are (raw contents, archives), with their own headers. */
  | { kind: 'raw'; status: number; headers: Record<string, string>; body: Buffer };

export interface RouteContext {
  tokenIndex: number;
  accept: string;
  rate: () => RateState;
}

export interface Route {
  pathKind: string;
  /** /rate_limit is free on GitHub. */
  uncounted?: boolean;
  run: (query: URLSearchParams, ctx: RouteContext) => Answer;
}

const DOCS = 'https://docs.github.com/enterprise-server@3.17/rest';

export function notFound(doc = DOCS, message = 'Not Found'): Answer {
  return { kind: 'error', status: 404, message, doc };
}

function list<T>(items: readonly T[], render: (item: T) => Json, capped = false): Answer {
  return { kind: 'list', items, render: render as (item: never) => Json, capped };
}

function time(value: string | null): number | undefined {
  if (value === null || value === '') return undefined;
  const ms = Date.parse(value);
  return Number.isNaN(ms) ? undefined : ms;
}

/**
 * A sort of a copy by a numeric key; ties by `tie` (default: base order, which is id/number order), reversed with
 * `desc`: GitHub breaks ties by id in the same direction.
 */
function sorted<T>(items: readonly T[], key: (item: T) => number, direction: 'asc' | 'desc', tie?: (item: T) => number): T[] {
  const copy = items.map((item, index) => ({ item, index: tie ? tie(item) : index, key: key(item) }));
  copy.sort((a, b) => (direction === 'asc' ? a.key - b.key || a.index - b.index : b.key - a.key || b.index - a.index));
  return copy.map((entry) => entry.item);
}

function direction(query: URLSearchParams, fallback: 'asc' | 'desc'): 'asc' | 'desc' {
  const value = query.get('direction');
  return value === 'asc' || value === 'desc' ? value : fallback;
}

/** GitHub's 422 for a query value it refuses (`state=bogus`, `sort=evil`, `milestone=abc`, a milestone that does not exist). */
function invalid(field: string): Answer {
  return { kind: 'error', status: 422, message: 'Validation Failed', doc: `${DOCS}/issues/issues#list-repository-issues (${field})` };
}

export class Routes {
  private readonly cache = new Map<string, { version: number; items: readonly unknown[] }>();

  /** The git data, read from the bare repository (when the fake has one). */
  private readonly gitData: FakeGitData | undefined;

  /** `rememberGit`: keep git's outputs per project version (cacheResponses: a benchmark's ceiling, not a measure of process spawns). */
  constructor(private readonly project: FakeProject, private readonly payloads: Payloads, private readonly options: { rateLimitEndpoint: boolean; gitDir?: string | undefined; rememberGit?: boolean }) {
    this.gitData = options.gitDir === undefined ? undefined : new FakeGitData(project, payloads, new FakeGitReader(options.gitDir, options.rememberGit ? () => project.version : undefined));
  }

  private cached<T>(key: string, build: () => readonly T[]): readonly T[] {
    const hit = this.cache.get(key);
    if (hit && hit.version === this.project.version) return hit.items as readonly T[];
    const items = build();
    this.cache.delete(key);
    this.cache.set(key, { version: this.project.version, items });
    if (this.cache.size > 64) this.cache.delete(this.cache.keys().next().value as string);
    return items;
  }

  /** The route for a path after the API prefix, or undefined (404). */
  match(path: string): Route | undefined {
    const p = this.project;
    if (path === '/rate_limit') {
      if (!this.options.rateLimitEndpoint) return { pathKind: 'rate_limit', run: () => notFound(`${DOCS}/rate-limit`, 'Rate limiting is not enabled.') };
      return { pathKind: 'rate_limit', uncounted: true, run: (_q, ctx) => ({ kind: 'object', body: this.payloads.rateLimit(ctx.rate()) }) };
    }
    const user = /^\/users\/([^/]+)$/.exec(path);
    if (user) {
      return {
        pathKind: 'user',
        run: () => {
          const profile = p.profile(decodeURIComponent(user[1] as string));
          return profile ? { kind: 'object', body: this.payloads.profile(profile), lastModified: profile.createdAt } : notFound(`${DOCS}/users/users#get-a-user`);
        },
      };
    }
    let rest: string | undefined;
    const byName = /^\/repos\/([^/]+)\/([^/]+)(\/.*)?$/.exec(path);
    if (byName && byName[1]?.toLowerCase() === p.repo.owner.toLowerCase() && byName[2]?.toLowerCase() === p.repo.name.toLowerCase()) rest = byName[3] ?? '';
    const byId = /^\/repositories\/(\d+)(\/.*)?$/.exec(path);
    if (byId && Number(byId[1]) === p.repo.id) rest = byId[2] ?? '';
    // A former name of a renamed or transferred repository: GitHub's 301 to the same path under /repositories/{id}.
    if (rest === undefined && byName && p.formerNames.includes(`${byName[1]}/${byName[2]}`.toLowerCase())) return movedRoute(p, this.payloads.hosts.apiUrl, byName[3] ?? '');
    // Another repository: GitHub's 404 links the documentation of the operation asked for.
    if (rest === undefined) return byName || byId ? { pathKind: 'repo', run: () => notFound(docsOf(this.repoRoute(byName?.[3] ?? byId?.[2] ?? '')?.pathKind)) } : undefined;
    return this.repoRoute(rest);
  }

  private repoRoute(rest: string): Route | undefined {
    const p = this.project;
    const pl = this.payloads;
    const number = (text: string | undefined) => Number.parseInt(text ?? '', 10);
    let m: RegExpExecArray | null;
    if (rest === '') return { pathKind: 'repo', run: () => ({ kind: 'object', body: pl.repository(true), lastModified: p.repo.updatedAt }) };
    const single = singleObjectRoute(p, pl, rest);
    if (single) return single;
    if (rest === '/issues') {
      return {
        pathKind: 'issues',
        run: (q) => {
          const bad = refused(q, { state: STATES, sort: ['created', 'updated', 'comments'], direction: DIRECTIONS });
          if (bad) return invalid(bad);
          const milestone = q.get('milestone');
          if (milestone !== null && milestone !== '*' && milestone !== 'none' && !p.milestones.some((m) => String(m.number) === milestone)) return invalid('milestone');
          return list(this.issues(q), (i: IssueRecord) => pl.issue(i, 'list'));
        },
      };
    }
    if (rest === '/issues/comments') return { pathKind: 'repo_issue_comments', run: (q) => list(this.comments(p.comments, q, 'asc'), (c) => pl.comment(c), true) };
    if (rest === '/issues/events') return { pathKind: 'repo_issue_events', run: () => list(this.cached('events', () => [...p.events].reverse()), (e) => pl.event(e, 'repo'), true) };
    if ((m = /^\/issues\/comments\/(\d+)$/.exec(rest))) {
      return { pathKind: 'issue_comment', run: () => { const c = p.commentById.get(number(m?.[1])); return c ? { kind: 'object', body: pl.comment(c), lastModified: c.updatedAt } : notFound(docsOf('issue_comment')); } };
    }
    if ((m = /^\/issues\/events\/(\d+)$/.exec(rest))) {
      return { pathKind: 'issue_event', run: () => { const e = p.events.find((x) => x.id === number(m?.[1])); return e ? { kind: 'object', body: pl.event(e, 'repo') } : notFound(docsOf('issue_event')); } };
    }
    if ((m = /^\/issues\/(\d+)(\/comments|\/events)?$/.exec(rest))) {
      const n = number(m[1]);
      const sub = m[2];
      const kind = sub === '/comments' ? 'issue_comments' : sub === '/events' ? 'issue_events' : 'issue';
      return {
        pathKind: kind,
        run: (q) => {
          const issue = p.byNumber.get(n);
          if (!issue) return missingIssue(p, n, kind);
          if (kind === 'issue') return { kind: 'object', body: pl.issue(issue, 'single'), lastModified: issue.updatedAt };
          if (kind === 'issue_comments') return list(this.comments(p.commentsByIssue.get(n) ?? [], q, 'asc', `issue:${n}`), (c) => pl.comment(c));
          return list(p.eventsByIssue.get(n) ?? [], (e) => pl.event(e, 'issue'));
        },
      };
    }
    if (rest === '/pulls') {
      return {
        pathKind: 'pulls',
        run: (q) => {
          const bad = refused(q, { state: STATES, sort: ['created', 'updated', 'popularity', 'long-running'], direction: DIRECTIONS });
          if (bad) return invalid(bad);
          const repo = pl.repository(false);
          return list(this.pulls(q), (i: IssueRecord) => pl.pull(i, 'list', repo));
        },
      };
    }
    if (rest === '/pulls/comments') return { pathKind: 'repo_review_comments', run: (q) => list(this.reviewComments(p.reviewComments, q), (c) => pl.reviewComment(c), true) };
    if ((m = /^\/pulls\/comments\/(\d+)$/.exec(rest))) {
      return { pathKind: 'review_comment', run: () => { const c = p.reviewCommentById.get(number(m?.[1])); return c ? { kind: 'object', body: pl.reviewComment(c), lastModified: c.updatedAt } : notFound(docsOf('review_comment')); } };
    }
    if ((m = /^\/pulls\/(\d+)(\/reviews|\/comments|\/requested_reviewers)?$/.exec(rest))) {
      const n = number(m[1]);
      const sub = m[2];
      const kind = sub === '/reviews' ? 'reviews' : sub === '/comments' ? 'pull_review_comments' : sub === '/requested_reviewers' ? 'requested_reviewers' : 'pull';
      return {
        pathKind: kind,
        run: (q) => {
          const issue = p.byNumber.get(n);
          if (!issue?.pull) return notFound(docsOf(kind));
          if (kind === 'pull') return { kind: 'object', body: pl.pull(issue, 'single', pl.repository(false)), lastModified: issue.updatedAt };
          if (kind === 'reviews') return list(p.reviewsByPull.get(n) ?? [], (r) => pl.review(r));
          if (kind === 'requested_reviewers') return { kind: 'object', body: { users: issue.pull.requestedReviewers.map((l) => pl.user(l)), teams: issue.pull.requestedTeams.map((t) => pl.team(t)) } };
          return list(this.reviewComments(p.reviewCommentsByPull.get(n) ?? [], q, `pull:${n}`), (c) => pl.reviewComment(c));
        },
      };
    }
    // GitHub lists labels by name, whatever the case.
    if (rest === '/labels') return { pathKind: 'labels', run: () => list(this.cached('labels', () => [...p.labels].sort((a, b) => (a.name.toLowerCase() < b.name.toLowerCase() ? -1 : a.name.toLowerCase() > b.name.toLowerCase() ? 1 : a.id - b.id))), (l) => pl.label(l)) };
    if (rest === '/milestones') {
      return {
        pathKind: 'milestones',
        run: (q) => {
          const bad = refused(q, { state: STATES, sort: ['due_on', 'completeness'], direction: DIRECTIONS });
          return bad ? invalid(bad) : list(this.milestones(q), (x) => pl.milestone(x));
        },
      };
    }
    if (rest === '/releases') {
      // Drafts are listed only to those with push access: here, any token.
      return {
        pathKind: 'releases',
        run: (_q, ctx) => {
          const drafts = ctx.tokenIndex >= 0;
          return list(this.cached(drafts ? 'releases+drafts' : 'releases', () => sorted(p.releases.filter((r) => drafts || !r.draft), (r) => r.createdAt, 'desc')), (r) => pl.release(r));
        },
      };
    }
    if ((m = /^\/releases\/assets\/(\d+)$/.exec(rest))) {
      const id = number(m[1]);
      return {
        pathKind: 'release_asset',
        run: (_q, ctx) => {
          for (const release of p.releases) {
            const asset = release.assets.find((a) => a.id === id);
            if (!asset || (release.draft && ctx.tokenIndex < 0)) continue;
            // The bytes: a 302 to signed storage, for drafts too (their browser_download_url answers 404).
            if (ctx.accept.includes('application/octet-stream')) return { kind: 'redirect', location: pl.assetStorageUrl(asset) };
            return { kind: 'object', body: pl.asset(release, asset) };
          }
          return notFound(`${DOCS}/releases/assets#get-a-release-asset`);
        },
      };
    }
    if (rest === '/collaborators') {
      return {
        pathKind: 'collaborators',
        run: (q) => {
          const bad = refused(q, { affiliation: ['outside', 'direct', 'all'], permission: ['pull', 'triage', 'push', 'maintain', 'admin'] });
          if (bad) return invalid(bad);
          const affiliation = q.get('affiliation') ?? 'all';
          const permission = q.get('permission');
          // `all` (the default): direct collaborators and organisation members with access; `outside`: direct ones who are no members.
          const affiliated = affiliation === 'direct' ? p.collaborators.filter((c) => c.direct) : affiliation === 'outside' ? p.collaborators.filter((c) => c.direct && c.outside === true) : p.collaborators;
          const granted = permission === null ? affiliated : affiliated.filter((c) => (PERMISSIONS[c.permission] ?? []).includes(permission));
          // By user id, whatever order they were granted access in.
          const idOf = (c: { login: string }) => p.displayUser(c.login).id;
          const items = [...granted].sort((a, b) => idOf(a) - idOf(b));
          return list(items, (c) => pl.collaborator(c));
        },
      };
    }
    if (rest === '/branches') {
      return {
        pathKind: 'branches',
        run: (q) => {
          const only = q.get('protected');
          const all = this.branches();
          const items = only === 'true' ? all.filter((b) => b.protection !== null) : only === 'false' ? all.filter((b) => b.protection === null) : all;
          return list(items, (b) => pl.branch(b));
        },
      };
    }
    if ((m = /^\/branches\/(.+)\/protection$/.exec(rest))) {
      const name = decodeURIComponent(m[1] as string);
      return {
        pathKind: 'branch_protection',
        run: () => {
          const branch = this.branches().find((b) => b.name === name);
          if (!branch) return notFound(`${DOCS}/branches/branch-protection#get-branch-protection`, 'Branch not found');
          if (!branch.protection) return notFound(`${DOCS}/branches/branch-protection#get-branch-protection`, 'Branch not protected');
          return { kind: 'object', body: pl.protection(branch) };
        },
      };
    }
    const gitData = this.gitData?.match(rest);
    if (gitData) return gitData;
    return { pathKind: 'unknown', run: () => notFound() };
  }

  /** Protected and named branches plus the head branches of pull requests that still exist, by name. */
  branches() {
    return this.cached('branches', () => {
      const p = this.project;
      const heads = p.pulls.filter((i) => pullOf(i).branchExists).map((i) => ({ name: pullOf(i).headRef, commit: `pr:${i.number}:head`, protection: null }));
      return [...p.branches, ...heads].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    });
  }

  private issues(q: URLSearchParams): readonly IssueRecord[] {
    const state = q.get('state') ?? 'open';
    const sort = q.get('sort') ?? 'created';
    const dir = direction(q, 'desc');
    const since = time(q.get('since'));
    const labels = (q.get('labels') ?? '').split(',').map((l) => l.trim()).filter(Boolean);
    const milestone = q.get('milestone');
    const assignee = q.get('assignee');
    const creator = q.get('creator');
    const mentioned = q.get('mentioned')?.toLowerCase() ?? null;
    const key = `issues|${state}|${sort}|${dir}|${since}|${labels.join(',')}|${milestone}|${assignee}|${creator}|${mentioned}`;
    return this.cached(key, () => {
      const items = this.project.issues.filter((i) => {
        if (state !== 'all' && i.state !== state) return false;
        if (since !== undefined && i.updatedAt < since) return false;
        if (labels.length > 0 && !labels.every((l) => i.labels.includes(l))) return false;
        if (milestone === 'none' && i.milestone !== null) return false;
        if (milestone === '*' && i.milestone === null) return false;
        if (milestone !== null && /^\d+$/.test(milestone) && i.milestone !== Number(milestone)) return false;
        if (assignee === 'none' && i.assignees.length > 0) return false;
        if (assignee === '*' && i.assignees.length === 0) return false;
        if (assignee !== null && assignee !== 'none' && assignee !== '*' && !i.assignees.some((a) => a.toLowerCase() === assignee.toLowerCase())) return false;
        if (creator !== null && i.user.toLowerCase() !== creator.toLowerCase()) return false;
        if (mentioned !== null && !mentions(i.body).includes(mentioned) && !(this.project.commentsByIssue.get(i.number) ?? []).some((c) => mentions(c.body).includes(mentioned))) return false;
        return true;
      });
      const byKey = sort === 'updated' ? (i: IssueRecord) => i.updatedAt : sort === 'comments' ? (i: IssueRecord) => i.comments : (i: IssueRecord) => i.number;
      return sorted(items, byKey, dir, (i) => i.id);
    });
  }

  private pulls(q: URLSearchParams): readonly IssueRecord[] {
    const state = q.get('state') ?? 'open';
    const sort = q.get('sort') ?? 'created';
    const dir = direction(q, sort === 'created' ? 'desc' : 'asc');
    const base = q.get('base');
    // `head=owner:ref` (the owner in any case); GitHub ignores a head without its owner.
    const head = q.get('head')?.includes(':') ? (q.get('head') as string) : null;
    const headOf = (i: IssueRecord) => `${this.project.repo.owner.toLowerCase()}:${pullOf(i).headRef}`;
    const wantedHead = head === null ? null : head.slice(0, head.indexOf(':')).toLowerCase() + head.slice(head.indexOf(':'));
    // long-running: pull requests (of `state`) older than a month with activity within it, oldest first by default.
    const month = sort === 'long-running' ? monthBefore(Date.now()) : 0;
    const key = `pulls|${state}|${sort}|${dir}|${base}|${head}|${month}`;
    return this.cached(key, () => {
      const items = this.project.pulls.filter((i) =>
        (state === 'all' || i.state === state) && (base === null || pullOf(i).baseRef === base) && (wantedHead === null || headOf(i) === wantedHead)
        && (sort !== 'long-running' || (i.createdAt < month && i.updatedAt >= month)));
      const byKey = sort === 'updated' ? (i: IssueRecord) => i.updatedAt
        : sort === 'popularity' ? (i: IssueRecord) => i.comments
        : (i: IssueRecord) => i.number;
      return sorted(items, byKey, dir);
    });
  }

  private comments<T extends { createdAt: number; updatedAt: number }>(base: readonly T[], q: URLSearchParams, fallback: 'asc' | 'desc', scope = 'repo'): readonly T[] {
    const sort = q.get('sort');
    const dir = sort === null ? 'asc' : direction(q, fallback);
    const since = time(q.get('since'));
    return this.cached(`comments|${scope}|${sort}|${dir}|${since}`, () => {
      const items = since === undefined ? base : base.filter((c) => c.updatedAt >= since);
      if (sort === 'updated') return sorted(items, (c) => c.updatedAt, dir);
      return dir === 'asc' ? items : [...items].reverse();
    });
  }

  private reviewComments<T extends { createdAt: number; updatedAt: number }>(base: readonly T[], q: URLSearchParams, scope = 'repo'): readonly T[] {
    return this.comments(base, q, 'asc', `review:${scope}`);
  }

  private milestones(q: URLSearchParams) {
    const state = q.get('state') ?? 'open';
    const sort = q.get('sort') ?? 'due_on';
    const dir = direction(q, 'asc');
    return this.cached(`milestones|${state}|${sort}|${dir}`, () => {
      const items = this.project.milestones.filter((m) => state === 'all' || m.state === state);
      if (sort === 'completeness') {
        const done = (n: number) => {
          const issues = this.project.issues.filter((i) => i.milestone === n);
          return issues.length === 0 ? 0 : issues.filter((i) => i.state === 'closed').length / issues.length;
        };
        return sorted(items, (m) => done(m.number), dir);
      }
      // Without a due date last, in either direction (as GitHub orders them).
      const due = sorted(items.filter((m) => m.dueOn !== null), (m) => m.dueOn as number, dir);
      return [...due, ...sorted(items.filter((m) => m.dueOn === null), (m) => m.number, dir)];
    });
  }
}
