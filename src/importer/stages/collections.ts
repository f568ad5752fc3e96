import { releaseAssetEndpoint } from '../attachments/scan.js';
import type { CollaboratorRowType } from '../store/collaborators.js';
import { planWalksAgainStep, planWalksStep, startCursor, writeCursorStep } from '../store/cursors.js';
import { objectsByNumber, type ObjectRow } from '../store/objects.js';
import { deleteReviewRequestsStep, newestCreatedAt, storePullWithMergedByStep } from '../store/stage-objects.js';
import { PageBatch, labelNames, numberFromUrl } from '../run/batch.js';
import type { RunContext } from '../run/context.js';
import type { Collection } from '../run/walk.js';
import { listedPullData, pullRequestRow } from './pull-object.js';

/*
 * The repo-wide lists an import walks, as the walker needs them. Each
 * turns a page of GitHub's items into rows (see types.ts for the columns).
 * Full runs list oldest first by creation (pages stay put while the project
 * changes); syncs ask by `since` or newest first, see run/walk.ts.
 */

const SINCE_QUERY = { sort: 'updated', direction: 'asc' };
const byId = (a: string, b: string) => Number(a) <= Number(b);

/** A small list a sync lists again whole, conditionally: an unchanged one answers 304 (free). */
const relist = (query: Record<string, string>) => ({ query, field: 'lastId' as const, valueOf: () => '', isOlder: () => false });

/**
 * The cursor a run writes with each page of a small list (labels,
 * milestones, releases) answered anew, not 304: its run says the list was
 * given whole in that run, so the rows it left out are gone upstream (see
 * stages/deletions.ts). Written with the page, a resumed run knows it too.
 */
export function listedCursor(list: string): string {
  return `${list}-listed`;
}

/** The step that records that run `ctx.run` had `list` answered anew (see listedCursor). */
function listedStep(ctx: RunContext, list: string) {
  return writeCursorStep(ctx.db, ctx.importId, { ...startCursor(listedCursor(list), ctx.run, undefined), done: true }, Date.now());
}

/** A small list's page handler: each item's rows, and on a page answered anew the list's listed cursor. */
function relistHandler(ctx: RunContext, list: string, add: (batch: PageBatch, item: any) => void): Collection['handle'] {
  return (items, answer) => {
    if (answer.notModified) return [];
    const batch = new PageBatch(ctx);
    for (const item of items) add(batch, item);
    batch.extra.push(listedStep(ctx, list));
    return batch.steps();
  };
}

/** The newest `created_at` stored of a type: where a `since` walk past the page cap picks up. */
function newestCreated(ctx: RunContext, type: string) {
  return () => newestCreatedAt(ctx.db, ctx.importId, type);
}

export function labelsCollection(ctx: RunContext): Collection {
  return {
    name: 'labels',
    path: `${ctx.repoPath}/labels`,
    fullQuery: {},
    newestFirst: relist({}),
    handle: relistHandler(ctx, 'labels', (batch, label) => batch.add(labelRow(label))),
  };
}

export function milestonesCollection(ctx: RunContext): Collection {
  const query = { state: 'all', sort: 'due_on', direction: 'asc' };
  return {
    name: 'milestones',
    path: `${ctx.repoPath}/milestones`,
    fullQuery: query,
    newestFirst: relist(query),
    handle: relistHandler(ctx, 'milestones', (batch, milestone) => batch.add(milestoneRow(milestone))),
  };
}

export function releasesCollection(ctx: RunContext): Collection {
  return {
    name: 'releases',
    path: `${ctx.repoPath}/releases`,
    fullQuery: {},
    newestFirst: relist({}),
    handle: relistHandler(ctx, 'releases', (batch, release) => addRelease(batch, ctx, release)),
  };
}

/** A label as stored (see types.ts). */
export const labelRow = (label: any): ObjectRow => ({ type: 'label', key: String(label.id), state: String(label.name).toLowerCase(), data: label });

/** A milestone as stored. */
export const milestoneRow = (m: any): ObjectRow => ({ type: 'milestone', key: String(m.id), number: m.number, state: m.state, createdAt: m.created_at, updatedAt: m.updated_at, data: m });

/** An issue, or a pull request's issue shape, as stored. */
export const issueRow = (issue: any): ObjectRow => ({
  type: issue.pull_request ? 'pull_request_issue' : 'issue',
  key: String(issue.id),
  number: issue.number,
  state: issue.state,
  createdAt: issue.created_at,
  updatedAt: issue.updated_at,
  labels: labelNames(issue.labels),
  comments: typeof issue.comments === 'number' ? issue.comments : null,
  data: issue,
});

/** An issue or pull request comment as stored. */
export const noteRow = (note: any): ObjectRow => ({ type: 'note', key: String(note.id), number: numberFromUrl(note.issue_url), createdAt: note.created_at, updatedAt: note.updated_at, data: note });

/** A review (diff) comment as stored. */
export const diffNoteRow = (note: any): ObjectRow => ({ type: 'diff_note', key: String(note.id), number: numberFromUrl(note.pull_request_url), createdAt: note.created_at, updatedAt: note.updated_at, data: note });

/** Adds a release, its assets, and the assets' downloads to `batch`. */
export function addRelease(batch: PageBatch, ctx: Pick<RunContext, 'record' | 'repoPath' | 'hosts'>, release: any): void {
  batch.add({ type: 'release', key: String(release.id), createdAt: release.created_at, data: release });
  for (const asset of release.assets ?? []) {
    batch.add({ type: 'release_asset', key: String(asset.id), parent: release.id, createdAt: asset.created_at, updatedAt: asset.updated_at, data: asset });
    if (typeof asset.browser_download_url !== 'string') continue;
    let url: URL | undefined;
    try {
      url = new URL(asset.browser_download_url);
    } catch {
      url = undefined;
    }
    // The bytes come from the API's asset endpoint, the one place a draft's assets can be read; the row keeps the download URL GitHub gave.
    const fetchUrl = releaseAssetEndpoint(ctx.record.apiUrl, ctx.repoPath, asset.id);
    if (url) batch.files.push({ url: url.toString(), kind: 'release_asset', allowed: fetchUrl !== undefined || ctx.hosts.allows(url), ...(fetchUrl ? { fetchUrl } : {}) });
  }
}

/** Which collaborators a `/collaborators` list holds: every one (`all`, GitHub's default), those added to the repository itself, those outside its organisation. */
export type Affiliation = 'all' | 'direct' | 'outside';

/** The rows each list stores: the collaborators themselves from `all`; from the others, marks of the same keys (the objects do not say how a user has access). */
export const COLLABORATOR_ROWS = { all: 'collaborator', direct: 'collaborator_direct', outside: 'collaborator_outside' } as const satisfies Record<Affiliation, CollaboratorRowType>;

/** The permissions a collaborator's `permissions` object grants, in GitHub's order: what `permission=` of the read API matches. */
const PERMISSIONS = ['pull', 'triage', 'push', 'maintain', 'admin'] as const;
function grantedPermissions(user: { permissions?: Record<string, unknown> }): string[] {
  return PERMISSIONS.filter((permission) => user.permissions?.[permission] === true);
}

/** The cursor a run writes with each page a collaborator list answered anew (not 304): its run says the list was given whole then. */
export function collaboratorsListedCursor(affiliation: Affiliation): string {
  return `collaborators-listed/${affiliation}`;
}

/**
 * `/collaborators?affiliation=…`, walked whole on every run (conditionally
 * on a sync). `all` stores each collaborator once, with the JSON as that
 * list gives it; `direct` and `outside` store a mark per collaborator they
 * list. Each page answered anew also records that this run listed it (see
 * collaboratorsListedCursor): the stage then drops the rows it left out.
 */
export function collaboratorsCollection(ctx: RunContext, affiliation: Affiliation): Collection {
  const query = { affiliation };
  const type = COLLABORATOR_ROWS[affiliation];
  const listed = collaboratorsListedCursor(affiliation);
  return {
    // Not `collaborators`, the cursor of the direct list imports walked before: its ETag must not make the first `all` list a 304.
    name: `collaborators/${affiliation}`,
    path: `${ctx.repoPath}/collaborators`,
    fullQuery: query,
    newestFirst: relist(query),
    handle: async (items, answer) => {
      if (answer.notModified) return [];
      const batch = new PageBatch(ctx);
      for (const user of items) {
        if (type === 'collaborator') batch.add({ type, key: String(user.id), state: String(user.login).toLowerCase(), labels: grantedPermissions(user), data: user });
        else batch.add({ type, key: String(user.id), data: user });
      }
      batch.extra.push(writeCursorStep(ctx.db, ctx.importId, { ...startCursor(listed, ctx.run, undefined), done: true }, Date.now()));
      return batch.steps();
    },
  };
}

/**
 * `/pulls`: pull requests with their requested reviewers (users and teams)
 * from the list itself. Each pull request's job then stores its single
 * object over the list item (see pull-object.ts).
 */
export function pullsCollection(ctx: RunContext): Collection {
  return {
    name: 'pulls',
    path: `${ctx.repoPath}/pulls`,
    fullQuery: { state: 'all', sort: 'created', direction: 'asc' },
    newestFirst: {
      query: { state: 'all', sort: 'updated', direction: 'desc' },
      field: 'since',
      valueOf: (pull) => String(pull.updated_at),
      isOlder: (value, watermark) => value < watermark,
    },
    handle: async (items) => {
      const batch = new PageBatch(ctx);
      const numbers = items.map((pull) => Number(pull.number));
      // The list has no merged_by; keep what the `merged` events gave.
      const mergedBy = new Map((await objectsByNumber(ctx.db, ctx.importId, 'pull_request_merged_by', numbers)).map((row) => [row.number, JSON.parse(row.data)]));
      // A sync lists again the pull request at its watermark: its stored single object of the same version stays (see listedPullData).
      const stored = new Map((ctx.record.mode === 'sync' ? await objectsByNumber(ctx.db, ctx.importId, 'pull_request', numbers) : []).map((row) => [row.number, JSON.parse(row.data)]));
      if (numbers.length > 0) {
        // The requests as they are now replace the ones stored (a review given removes its request).
        batch.extra.push(deleteReviewRequestsStep(ctx.db, ctx.importId, numbers));
      }
      for (const pull of items) {
        const listed = listedPullData(pull, stored.get(Number(pull.number)));
        const merged = mergedBy.get(Number(pull.number));
        batch.add(pullRequestRow(pull, merged && !listed.merged_by ? { ...listed, merged_by: merged } : listed));
        for (const user of pull.requested_reviewers ?? []) {
          batch.add({ type: 'pull_request_review_request', key: `${pull.number}/user/${user.login}`, number: pull.number, data: user });
        }
        for (const team of pull.requested_teams ?? []) {
          batch.add({ type: 'pull_request_review_request', key: `${pull.number}/team/${team.slug}`, number: pull.number, data: team });
        }
      }
      // Delete first, then the upserts: PageBatch puts its own statements before `extra`.
      const steps = await batch.steps();
      const deletes = batch.extra.length > 0 ? [steps.pop()!] : [];
      return [...deletes, ...steps];
    },
  };
}

/** `/issues?state=all`: issues, and the issue side of every pull request (labels, comment counts). */
export function issuesCollection(ctx: RunContext): Collection {
  return {
    name: 'issues',
    path: `${ctx.repoPath}/issues`,
    fullQuery: { state: 'all', sort: 'created', direction: 'asc' },
    sinceQuery: { state: 'all', ...SINCE_QUERY },
    capSince: newestCreated(ctx, 'issue'),
    handle: (items) => {
      const batch = new PageBatch(ctx);
      for (const issue of items) batch.add(issueRow(issue));
      return batch.steps();
    },
  };
}

/** `/issues/comments`: conversation comments of issues and pull requests. */
export function notesCollection(ctx: RunContext): Collection {
  return {
    name: 'notes',
    path: `${ctx.repoPath}/issues/comments`,
    fullQuery: { sort: 'created', direction: 'asc' },
    sinceQuery: SINCE_QUERY,
    capSince: newestCreated(ctx, 'note'),
    handle: (items) => {
      const batch = new PageBatch(ctx);
      for (const note of items) batch.add(noteRow(note));
      return batch.steps();
    },
  };
}

/** `/pulls/comments`: review (diff) comments, threads by `in_reply_to_id`. */
export function diffNotesCollection(ctx: RunContext): Collection {
  return {
    name: 'diff_notes',
    path: `${ctx.repoPath}/pulls/comments`,
    fullQuery: { sort: 'created', direction: 'asc' },
    sinceQuery: SINCE_QUERY,
    capSince: newestCreated(ctx, 'diff_note'),
    handle: (items) => {
      const batch = new PageBatch(ctx);
      for (const note of items) batch.add(diffNoteRow(note));
      return batch.steps();
    },
  };
}

/** The rows of a page of issue events; `merged` events give the pull request's merged_by. */
export async function eventSteps(ctx: RunContext, items: any[], number?: number) {
  const batch = new PageBatch(ctx);
  const merged = new Map<number, unknown>();
  for (const event of items) {
    const issueNumber = number ?? (typeof event.issue?.number === 'number' ? event.issue.number : null);
    // The embedded issue is the issue as it is now, stored already: kept once, re-embedded when read (see the GitHub-compatible API).
    const { issue: _issue, ...stored } = event;
    batch.add({ type: 'issue_event', key: String(event.id), number: issueNumber, createdAt: event.created_at, data: stored });
    if (event.event === 'merged' && issueNumber !== null && event.actor) merged.set(issueNumber, event.actor);
  }
  for (const [pr, actor] of merged) batch.add({ type: 'pull_request_merged_by', key: String(pr), number: pr, data: actor });
  // Fill merged_by into the stored pull requests (the list does not carry it).
  const pulls = await objectsByNumber(ctx.db, ctx.importId, 'pull_request', [...merged.keys()]);
  for (const pull of pulls) {
    const data = JSON.parse(pull.data) as Record<string, unknown>;
    if (data.merged_by) continue;
    batch.extra.push(storePullWithMergedByStep(ctx.db, ctx.importId, pull.key, { ...data, merged_by: merged.get(pull.number) }));
  }
  return batch.steps();
}

/** `/issues/events`: newest first by id (GitHub has no `since` for them). */
export function eventsCollection(ctx: RunContext, onCap: () => Promise<void>): Collection {
  return {
    name: 'events',
    path: `${ctx.repoPath}/issues/events`,
    fullQuery: {},
    newestFirst: { query: {}, field: 'lastId', valueOf: (event) => String(event.id), isOlder: byId, fullToo: true },
    onCap,
    handle: (items) => eventSteps(ctx, items),
  };
}

/** `/issues/{n}/events`: the fallback where the repo-wide list stops at GitHub's page cap. */
export function issueEventsCollection(ctx: RunContext, number: number): Collection {
  return {
    name: `events/${number}`,
    path: `${ctx.repoPath}/issues/${number}/events`,
    fullQuery: {},
    newestFirst: { query: {}, field: 'lastId', valueOf: (event) => String(event.id), isOlder: byId },
    handle: (items) => eventSteps(ctx, items, number),
  };
}

/** The cursor of the walk that fetches one protected branch's rules: `protection/<name>`. */
export const PROTECTION_PREFIX = 'protection/';

/**
 * `/branches?protected=true`: the names of protected branches, whose rules
 * are fetched one by one after the list. Each page plans those walks in its
 * own batch (a `protection/<name>` cursor of this run, see planWalksStep):
 * the names are durable when the list's cursor says done. A 304 (unchanged
 * list) plans again the names the list gave when it last answered.
 */
export function protectedBranchesCollection(ctx: RunContext): Collection {
  const query = { protected: 'true' };
  const name = 'branches';
  return {
    name,
    path: `${ctx.repoPath}/branches`,
    fullQuery: query,
    newestFirst: relist(query),
    handle: (items, answer) => {
      if (answer.notModified) return [planWalksAgainStep(ctx.db, ctx.importId, ctx.run, { prefix: PROTECTION_PREFIX, list: name }, Date.now())];
      const names = items.flatMap((branch) => (typeof branch.name === 'string' ? [`${PROTECTION_PREFIX}${branch.name}`] : []));
      return [planWalksStep(ctx.db, ctx.importId, ctx.run, names, Date.now())];
    },
  };
}
