import type { Compilable } from 'kysely';
import { GithubAnswerError, GithubRequestError } from '../errors.js';
import { PageBatch } from '../run/batch.js';
import type { RunContext } from '../run/context.js';
import { listItems } from '../run/shape.js';
import { messageOf, PER_PAGE, walk, type Collection } from '../run/walk.js';
import { findCursor } from '../store/cursors.js';
import { deleteObjectsSteps, storedObjects, type StoredObjectRef } from '../store/deletions.js';
import { storedStamped, type StampedRef } from '../store/reconcile-deletions.js';
import { diffNoteCounts, pullsStatingReviewComments, statedCommentCounts } from '../store/reconcile.js';
import type { StoredType } from '../types.js';
import { diffNoteRow, listedCursor, noteRow } from './collections.js';
import { inParallel } from './parallel.js';

/*
 * What a sync finds deleted upstream without a webhook saying so (a `since`
 * window never lists what is gone): small lists answered anew leave the
 * deleted out, and GitHub's comment counts say which issues and pull
 * requests to list again whole. The large lists are compared in full now
 * and then (full-compare.ts). Every deletion also records a `deleted`
 * change for the feeds (store/deletions.ts).
 */

/** GitHub's clock may run behind ours a little: objects stored from less than this before a listing began are not taken as gone. */
const CLOCK_SLACK_MS = 60_000;

/**
 * Walks a small list (labels, milestones, releases: listed whole on every
 * run, conditionally on a sync) and, when this run had it answered anew
 * (its listed cursor is this run's, written with the pages), deletes the
 * stored objects of `types` this run did not write: the list left them
 * out. A 304 says the list is as it was, so nothing is deleted. Deleting
 * again after a crash deletes nothing more.
 */
export async function walkAndDropUnlisted(ctx: RunContext, collection: Collection, types: readonly StoredType[]): Promise<void> {
  await walk(ctx, collection);
  const listed = await findCursor(ctx.db, ctx.importId, listedCursor(collection.name));
  if (listed?.run !== ctx.run) return;
  const gone = (await Promise.all(types.map((type) => storedObjects(ctx.db, ctx.importId, { type, notInRun: ctx.run })))).flat();
  await commitDeletions(ctx, gone, collection.name);
}

/** Deletes `gone` (with their `deleted` changes) in one fenced batch with `extra`, and says so in the log. */
export async function commitDeletions(ctx: RunContext, gone: readonly StoredObjectRef[], list: string, extra: readonly (Compilable | null)[] = []): Promise<void> {
  if (gone.length === 0 && extra.length === 0) return;
  await ctx.commit([...deleteObjectsSteps(ctx.db, ctx.importId, ctx.importName, gone, Date.now()), ...extra]);
  if (gone.length === 0) return;
  const types: Record<string, number> = {};
  for (const object of gone) types[object.type] = (types[object.type] ?? 0) + 1;
  ctx.logger.info({ event: 'import_objects_deleted', import: ctx.importName, list, deleted: types }, `${list}: ${gone.length} object(s) deleted upstream removed from the copy`);
}

/**
 * The stored objects a whole listing did not give: gone upstream. Those
 * stored with an `updated_at` after `cutoff` are kept (stored from an
 * answer newer than the listing: created after it passed).
 */
export function unlisted(stored: readonly StampedRef[], listed: ReadonlySet<string>, cutoff: string): StoredObjectRef[] {
  return stored.filter((row) => !listed.has(row.key) && (row.updatedAt === null || row.updatedAt <= cutoff)).map(({ type, key, number }) => ({ type, key, number }));
}

/** Where a listing that began at `beganMs` and saw `newest` (its newest `updated_at`) stops vouching: see unlisted. */
export function listingCutoff(newest: string | null, beganMs: number): string {
  const began = new Date(Math.floor((beganMs - CLOCK_SLACK_MS) / 1000) * 1000).toISOString().replace(/\.\d{3}Z$/, 'Z');
  return newest !== null && newest > began ? newest : began;
}

/** The newest `updated_at` of `items`, or null. */
export function newestUpdate(items: readonly any[], newest: string | null = null): string | null {
  let found = newest;
  for (const item of items) if (typeof item?.updated_at === 'string' && (found === null || item.updated_at > found)) found = item.updated_at;
  return found;
}

/** One issue's or pull request's comments (notes), or one pull request's review comments (diff notes), to list again whole. */
interface Relist {
  type: 'note' | 'diff_note';
  number: number;
}

/**
 * Lists again whole the comments of every issue and pull request that has
 * more stored than GitHub states (`comments`), and the review comments of
 * every pull request with more stored than its `review_comments`; stores
 * what they give and deletes the stored ones they leave out. Where the
 * counts agree nothing is asked. An answer refused (the issue gone: the
 * full compare deletes it) leaves the difference to the count check.
 */
export async function dropDeletedComments(ctx: RunContext): Promise<void> {
  const targets = await overCounted(ctx);
  await inParallel(ctx.concurrency, targets, async (target) => {
    try {
      await relistComments(ctx, target);
    } catch (error) {
      if (!(error instanceof GithubRequestError || error instanceof GithubAnswerError)) throw error;
      ctx.logger.warn({ event: 'import_relist_failed', import: ctx.importName, type: target.type, number: target.number, error: error.message }, `#${target.number}: ${error.message}`);
    }
  });
}

/** The issues and pull requests with more comments (or review comments) stored than GitHub states. */
async function overCounted(ctx: RunContext): Promise<Relist[]> {
  const { db, importId } = ctx;
  const targets: Relist[] = [];
  for (const row of await statedCommentCounts(db, importId)) {
    if (Number(row.imported) > Number(row.comments)) targets.push({ type: 'note', number: Number(row.number) });
  }
  const pulls = await pullsStatingReviewComments(db, importId);
  if (pulls.length === 0) return targets;
  const stored = await diffNoteCounts(db, importId);
  for (const pull of pulls) {
    const stated = (JSON.parse(pull.data) as { review_comments?: unknown }).review_comments;
    if (typeof stated === 'number' && (stored.get(Number(pull.number)) ?? 0) > stated) targets.push({ type: 'diff_note', number: Number(pull.number) });
  }
  return targets;
}

/** One issue's comments or one pull request's review comments, listed whole: stored, and the stored ones left out deleted, in one batch. */
async function relistComments(ctx: RunContext, target: Relist): Promise<void> {
  const began = Date.now();
  const path = target.type === 'note' ? `${ctx.repoPath}/issues/${target.number}/comments` : `${ctx.repoPath}/pulls/${target.number}/comments`;
  const items = await listWhole(ctx, path);
  if (items === null) return;
  const batch = new PageBatch(ctx);
  for (const item of items) batch.add(target.type === 'note' ? noteRow(item) : diffNoteRow(item));
  const listed = new Set(batch.objects.map((row) => row.key));
  const gone = unlisted(await storedStamped(ctx.db, ctx.importId, target.type, [target.number]), listed, listingCutoff(newestUpdate(items), began));
  await commitDeletions(ctx, gone, path.slice(ctx.repoPath.length + 1), await batch.steps());
}

/**
 * Every item of a short list, page by page (following `next`), or null when
 * GitHub answers 404 or 410 (the issue or pull request is gone).
 * @throws GithubRequestError for another refusal.
 */
async function listWhole(ctx: RunContext, path: string): Promise<any[] | null> {
  const items: any[] = [];
  for (let page = 1; ; page++) {
    const response = await ctx.client.get(path, { query: { per_page: String(PER_PAGE), page: String(page) } });
    if (response.status === 404 || response.status === 410) return null;
    if (response.status < 200 || response.status >= 300) throw new GithubRequestError(path, response.status, messageOf(response.data));
    const got = listItems(path, response.data);
    items.push(...got);
    if (got.length < PER_PAGE || !response.links.next) return items;
  }
}
