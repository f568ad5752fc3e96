import type { RunContext } from '../run/context.js';
import { walk } from '../run/walk.js';
import { findCursor, startCursor, writeCursorStep, type Cursor } from '../store/cursors.js';
import { storedObjects, type StoredObjectRef } from '../store/deletions.js';
import { storedRepository } from '../store/objects.js';
import { storedStamped } from '../store/reconcile-deletions.js';
import { commitDeletions, listingCutoff, newestUpdate, unlisted } from './deletions.js';

/*
 * The large lists (issues and pull requests, comments, review comments)
 * are walked by `since` on a sync, which never lists what was deleted. Now
 * and then (FORGESYNC_IMPORT_RECONCILE_INTERVAL) a sync lists them in full
 * and deletes what is stored and no longer listed: an issue with its notes
 * and events, a comment, a review comment. Pull requests cannot be deleted
 * on GitHub; events only go with their issue.
 */

/** The cursor that records the last full compare: its `since` is when that compare began (a first import counts as one). */
export const FULL_COMPARE = 'full-compare';

/** A `since` before anything on GitHub: a since walk from it lists everything. */
const EPOCH = '1970-01-01T00:00:00Z';

/** One list a full compare walks: its own cursor, and the stored type it vouches for. */
interface CompareList {
  name: string;
  path: string;
  query: Record<string, string>;
  type: 'issue' | 'note' | 'diff_note';
}

/** What a compare's walk listed: the ids, and the newest `updated_at` among them. */
interface Listed {
  ids: Set<string>;
  newest: string | null;
}

const isoTime = (ms: number) => new Date(Math.floor(ms / 1000) * 1000).toISOString().replace(/\.\d{3}Z$/, 'Z');

/**
 * Compares the large lists in full when the last compare began more than
 * `intervalMs` ago (or never did, for an import older than compares). A
 * first import lists everything itself: it records itself as a compare,
 * from when it began.
 */
export async function compareInFullWhenDue(ctx: RunContext, intervalMs: number): Promise<void> {
  const last = await findCursor(ctx.db, ctx.importId, FULL_COMPARE);
  const now = Date.now();
  if (ctx.record.mode !== 'sync') {
    if (last?.run !== ctx.run) await ctx.commit([comparedStep(ctx, ctx.record.startedAt ?? now)]);
    return;
  }
  const lastMs = last?.since ? Date.parse(last.since) : Number.NaN;
  if (!Number.isNaN(lastMs) && now - lastMs < intervalMs) return;
  await compareInFull(ctx, now);
}

/** The step that records a full compare begun at `beganMs` (see FULL_COMPARE). */
function comparedStep(ctx: RunContext, beganMs: number) {
  return writeCursorStep(ctx.db, ctx.importId, { ...startCursor(FULL_COMPARE, ctx.run, undefined), done: true, since: isoTime(beganMs) }, Date.now());
}

/**
 * Walks issues, comments and review comments whole (by `since` windows from
 * the epoch, oldest update first: no page cap on the way), keeping the ids
 * in memory, then deletes in one batch what is stored and was not listed,
 * and records the compare. The walks start afresh every time: a compare
 * cut short (a crash) is started over by the resumed run, as the ids it
 * had listed are gone with the process.
 */
async function compareInFull(ctx: RunContext, began: number): Promise<void> {
  // With issues turned off GitHub answers /issues with 410 (an empty list to the walker): that says nothing about what was deleted.
  const issuesOn = (await storedRepository(ctx.db, ctx.importId))?.has_issues !== false;
  const lists: CompareList[] = [
    ...(issuesOn
      ? [
          { name: 'compare/issues', path: `${ctx.repoPath}/issues`, query: { state: 'all', sort: 'updated', direction: 'asc' }, type: 'issue' as const },
          { name: 'compare/notes', path: `${ctx.repoPath}/issues/comments`, query: { sort: 'updated', direction: 'asc' }, type: 'note' as const },
        ]
      : []),
    { name: 'compare/diff_notes', path: `${ctx.repoPath}/pulls/comments`, query: { sort: 'updated', direction: 'asc' }, type: 'diff_note' },
  ];
  ctx.logger.info({ event: 'import_full_compare', import: ctx.importName, lists: lists.map((list) => list.name) }, 'listing issues and comments in full to find what was deleted upstream');
  await ctx.commit(lists.map((list) => writeCursorStep(ctx.db, ctx.importId, freshWalk(list.name, ctx.run), Date.now())));
  const listed = await Promise.all(lists.map((list) => listIds(ctx, list)));
  const gone = new Map<string, StoredObjectRef>();
  const add = (refs: readonly StoredObjectRef[]) => refs.forEach((ref) => gone.set(`${ref.type}\u0000${ref.key}`, ref));
  for (const [index, list] of lists.entries()) {
    const seen = listed[index]!;
    const missing = unlisted(await storedStamped(ctx.db, ctx.importId, list.type), seen.ids, listingCutoff(seen.newest, began));
    add(missing);
    if (list.type !== 'issue') continue;
    // A deleted issue takes its comments and events with it.
    const numbers = missing.flatMap((ref) => (ref.number === null ? [] : [ref.number]));
    add(await storedObjects(ctx.db, ctx.importId, { type: 'note', numbers }));
    add(await storedObjects(ctx.db, ctx.importId, { type: 'issue_event', numbers }));
  }
  await commitDeletions(ctx, [...gone.values()], 'full compare', [comparedStep(ctx, began)]);
}

/** A since walk's cursor from the epoch, of this run: walk() takes it as it is and lists everything. */
function freshWalk(name: string, run: number): Cursor {
  return { ...startCursor(name, run, undefined), walkSince: EPOCH, since: EPOCH, lastPage: 1 };
}

/** Walks one list whole (see compareInFull), storing nothing but its cursor; returns what it listed. */
async function listIds(ctx: RunContext, list: CompareList): Promise<Listed> {
  const seen: Listed = { ids: new Set(), newest: null };
  await walk(ctx, {
    name: list.name,
    path: list.path,
    fullQuery: list.query,
    sinceQuery: list.query,
    handle: (items) => {
      for (const item of items) if (item?.id !== undefined && item?.id !== null) seen.ids.add(String(item.id));
      seen.newest = newestUpdate(items, seen.newest);
      return [];
    },
  });
  return seen;
}
