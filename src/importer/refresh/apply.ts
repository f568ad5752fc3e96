import type { Compilable } from 'kysely';
import type { ProjectTargetDetail } from '../../replication/api.js';
import { GithubRequestError } from '../errors.js';
import { PageBatch } from '../run/batch.js';
import type { RunContext } from '../run/context.js';
import { checkObject } from '../run/shape.js';
import { messageOf } from '../run/walk.js';
import { addRelease, diffNoteRow, issueRow, labelRow, milestoneRow, noteRow } from '../stages/collections.js';
import { failureSteps, objectWork, type ObjectWorkContext } from '../stages/object-work.js';
import { pullRequestRow } from '../stages/pull-object.js';
import { deleteObjectsSteps, storedObjects, type ObjectSelection } from '../store/deletions.js';
import { objectData, objectsByNumber } from '../store/objects.js';
import type { StoredType } from '../types.js';

/**
 * What a refresh of one target does: the statements that bring the copy
 * to what the API answers now, or `sync` when the target is a list best
 * read again whole by a sync (collaborators, protected branches, the
 * repository: their walks are conditional, an unchanged list costs
 * nothing).
 */
export type RefreshOutcome = { steps: (Compilable | null)[]; result: 'stored' | 'deleted' } | { sync: true };

/** What a refresh needs besides the run's context: a per-object job's context, for a pull request's job. */
export type RefreshEnv = { ctx: RunContext; work: ObjectWorkContext };

/** A target key's kind and argument: `issue:12` → ['issue', '12']. */
function splitTarget(target: string): [string, string] {
  const at = target.indexOf(':');
  return at < 0 ? [target, ''] : [target.slice(0, at), target.slice(at + 1)];
}

/**
 * Fetches `target` (see ProjectTarget in replication/webhooks/github-project.ts)
 * and says what to store: the object as answered, or its removal when the
 * API says it is gone (404, 410; 301 for an issue moved to another
 * repository). The payload's hints only say where to look.
 * @throws GithubRequestError for answers that say nothing about the object (5xx after retries, 403…): the refresh is tried again.
 */
export async function refreshTarget(env: RefreshEnv, target: string, detail: ProjectTargetDetail): Promise<RefreshOutcome> {
  const { ctx } = env;
  const [kind, arg] = splitTarget(target);
  switch (kind) {
    case 'issue':
      return refreshIssue(ctx, Number(arg));
    case 'comment':
      return refreshComment(ctx, 'note', `${ctx.repoPath}/issues/comments/${arg}`, arg, detail.issue);
    case 'review-comment':
      return refreshComment(ctx, 'diff_note', `${ctx.repoPath}/pulls/comments/${arg}`, arg, detail.pull);
    case 'pull':
      return { steps: failureSteps(env.work, await objectWork(env.work, `pull:${Number(arg)}`)), result: 'stored' };
    case 'label':
      return refreshLabel(ctx, arg, detail.name);
    case 'milestone':
      return refreshSingle(ctx, `${ctx.repoPath}/milestones/${Number(arg)}`, (batch, data) => batch.add(milestoneRow(data)), [{ type: 'milestone', numbers: [Number(arg)] }]);
    case 'release':
      return refreshRelease(ctx, Number(arg));
    default:
      // collaborators, protected-branches, repository (and any kind a newer receiver names).
      return { sync: true };
  }
}

/** Answers that say the object is not (or no longer) in this repository. */
const GONE = new Set([301, 404, 410]);

/**
 * One GET of a single object: on 200 `store` adds it to a batch; when gone,
 * the `gone` selections are deleted (each a deleted change for the feeds).
 */
async function refreshSingle(ctx: RunContext, path: string, store: (batch: PageBatch, data: any) => void, gone: ObjectSelection[]): Promise<RefreshOutcome> {
  const response = await ctx.client.get(path);
  if (GONE.has(response.status)) return { steps: await deletionSteps(ctx, gone), result: 'deleted' };
  if (response.status !== 200) throw new GithubRequestError(path, response.status, messageOf(response.data));
  checkObject(path, response.data);
  const batch = new PageBatch(ctx);
  store(batch, response.data);
  return { steps: await batch.steps(), result: 'stored' };
}

async function deletionSteps(ctx: RunContext, selections: readonly ObjectSelection[]): Promise<Compilable[]> {
  const found = (await Promise.all(selections.map((selection) => storedObjects(ctx.db, ctx.importId, selection)))).flat();
  return deleteObjectsSteps(ctx.db, ctx.importId, ctx.importName, found, Date.now());
}

/** An issue (or a pull request's issue shape); a deleted or transferred issue leaves with its comments and events. */
function refreshIssue(ctx: RunContext, number: number): Promise<RefreshOutcome> {
  const numbers = [number];
  return refreshSingle(ctx, `${ctx.repoPath}/issues/${number}`, (batch, issue) => batch.add(issueRow(issue)), [
    { type: 'issue', numbers },
    { type: 'note', numbers },
    { type: 'issue_event', numbers },
  ]);
}

/**
 * An issue comment (`note`) or a review comment (`diff_note`). GitHub
 * counts them on their issue (`comments`) or pull request
 * (`review_comments`), and a new comment also moves that object's
 * `updated_at`: one that appears or goes is counted there too, rather than
 * fetching the issue again (which would double the requests of the most
 * common delivery).
 */
async function refreshComment(ctx: RunContext, type: 'note' | 'diff_note', path: string, id: string, on: number | undefined): Promise<RefreshOutcome> {
  const stored = await storedObjects(ctx.db, ctx.importId, { type, keys: [id] });
  const response = await ctx.client.get(path);
  if (GONE.has(response.status)) {
    const steps = deleteObjectsSteps(ctx.db, ctx.importId, ctx.importName, stored, Date.now());
    const number = stored[0]?.number ?? on;
    if (stored.length === 0 || number === null || number === undefined) return { steps, result: 'deleted' };
    return { steps: [...steps, ...(await countOn(ctx, type, number, -1, null))], result: 'deleted' };
  }
  if (response.status !== 200) throw new GithubRequestError(path, response.status, messageOf(response.data));
  checkObject(path, response.data);
  const comment = response.data as any;
  const row = type === 'note' ? noteRow(comment) : diffNoteRow(comment);
  const batch = new PageBatch(ctx);
  batch.add(row);
  const counted = stored.length === 0 && typeof row.number === 'number' ? await countOn(ctx, type, row.number, +1, comment.created_at) : [];
  return { steps: [...(await batch.steps()), ...counted], result: 'stored' };
}

/** The stored object a comment of `type` is counted on, and its count field. */
const COUNTED_ON: Record<'note' | 'diff_note', { types: StoredType[]; field: string }> = {
  // A pull request's conversation comments count on its issue shape and on its single object (a list item has no count).
  note: { types: ['issue', 'pull_request_issue', 'pull_request'], field: 'comments' },
  // A review comment counts on the pull request; its issue shape has no such count but moves its `updated_at` all the same.
  diff_note: { types: ['pull_request', 'pull_request_issue'], field: 'review_comments' },
};

/** Adds `delta` to the count of the issue or pull request `number` where its JSON has one, and moves its `updated_at` to `at` when later. */
async function countOn(ctx: RunContext, type: 'note' | 'diff_note', number: number, delta: number, at: string | null): Promise<(Compilable | null)[]> {
  const { types, field } = COUNTED_ON[type];
  const batch = new PageBatch(ctx);
  for (const owner of types) {
    for (const row of await objectsByNumber(ctx.db, ctx.importId, owner, [number])) {
      const data = JSON.parse(row.data) as Record<string, any>;
      const counted = typeof data[field] === 'number';
      const later = at !== null && at > String(data.updated_at ?? '');
      if (!counted && !later) continue;
      const patched = { ...data, ...(counted ? { [field]: Math.max(0, data[field] + delta) } : {}), ...(later ? { updated_at: at } : {}) };
      batch.add(owner === 'pull_request' ? pullRequestRow(patched) : issueRow(patched));
    }
  }
  return batch.objects.length > 0 ? batch.steps() : [];
}

/** A label, read by its name (the hint, else the stored one); gone, it leaves by its id. */
async function refreshLabel(ctx: RunContext, id: string, name: string | undefined): Promise<RefreshOutcome> {
  const known = name ?? (JSON.parse((await objectData(ctx.db, ctx.importId, 'label', id)) ?? '{}') as { name?: string }).name;
  const gone: ObjectSelection[] = [{ type: 'label', keys: [id] }];
  if (known === undefined) return { steps: await deletionSteps(ctx, gone), result: 'deleted' };
  return refreshSingle(ctx, `${ctx.repoPath}/labels/${encodeURIComponent(known)}`, (batch, label) => batch.add(labelRow(label)), gone);
}

/** A release with its assets: those no longer in its `assets` leave; gone, it leaves with all of them. */
async function refreshRelease(ctx: RunContext, id: number): Promise<RefreshOutcome> {
  const keys = [String(id)];
  let listed: string[] | undefined;
  const outcome = await refreshSingle(
    ctx,
    `${ctx.repoPath}/releases/${id}`,
    (batch, release) => {
      addRelease(batch, ctx, release);
      listed = (release.assets ?? []).map((asset: { id: unknown }) => String(asset.id));
    },
    [
      { type: 'release', keys },
      { type: 'release_asset', parents: [id] },
    ],
  );
  if (!('steps' in outcome) || listed === undefined) return outcome;
  const kept = new Set(listed);
  const dropped = (await storedObjects(ctx.db, ctx.importId, { type: 'release_asset', parents: [id] })).filter((asset) => !kept.has(asset.key));
  return { ...outcome, steps: [...outcome.steps, ...deleteObjectsSteps(ctx.db, ctx.importId, ctx.importName, dropped, Date.now())] };
}
