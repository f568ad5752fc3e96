import { sql, type Compilable, type Kysely } from 'kysely';
import { prepared, type PreparedQuery } from '../../store/sql.js';
import type { Schema } from '../../store/types.js';

/**
 * Where one collection's walk stands (`import_cursors`). A walk goes by
 * page number while it can (pages fetched in parallel, each recorded as
 * done), then by `since` windows; what carries over to the next run (a
 * sync) is the watermark (`since`), the first page's ETag and the newest id
 * seen, so the next run asks only for what changed.
 */
export interface Cursor {
  collection: string;
  /** The run the walk state belongs to; a cursor of an earlier run only lends its watermark, ETag and last id. */
  run: number;
  done: boolean;
  /** Page walk: the last page walked by number (from the first page's Link, bounded: see run/walk.ts), or, in a since walk, the page within the window. */
  lastPage: number | null;
  /** Page walk: every page up to this one is done (0 before page 1 is). */
  doneThrough: number;
  /** Page walk: the pages done beyond `doneThrough` (sorted; pages come back out of order, never more than the walk's bound). */
  donePages: number[];
  /** Page walk: the last page page 1 claimed when that was too many to believe (the walk goes on page by page, or by `since`); else null. */
  claimedLast: number | null;
  /** Since walk: the current window's start; null while walking by page. */
  walkSince: string | null;
  /** The watermark the next run starts from. */
  since: string | null;
  etag: string | null;
  /** Newest id seen (event lists walked newest first stop at it). */
  lastId: string | null;
  pages: number;
  items: number;
}

type CursorRowOut = { collection: string; run: number; done: number; next_url: string | null; walk_since: string | null; since: string | null; etag: string | null; last_id: string | null; pages: number; items: number | string };

/** The page walk's part of a cursor. */
type PageWalkState = Pick<Cursor, 'lastPage' | 'doneThrough' | 'donePages' | 'claimedLast'>;

const pageNumber = (value: unknown): number | null => (typeof value === 'number' && Number.isSafeInteger(value) && value >= 0 ? value : null);

/**
 * The page walk's state as stored in next_url (JSON: it changes with every
 * page and is read only here): `{ lastPage, doneThrough, donePages,
 * claimedLast }`, its size bounded by the walk's page bound. Cursors stored
 * before doneThrough existed (`{ lastPage, donePages }`, every page done
 * listed) read as the same state.
 */
function pageWalkOf(text: string | null): PageWalkState {
  const stored = (text ? JSON.parse(text) : {}) as Partial<Record<keyof PageWalkState, unknown>>;
  const lastPage = pageNumber(stored.lastPage);
  const listed = Array.isArray(stored.donePages) ? stored.donePages.map(pageNumber).filter((page): page is number => page !== null) : [];
  const state: PageWalkState = { lastPage, doneThrough: pageNumber(stored.doneThrough) ?? 0, donePages: [], claimedLast: pageNumber(stored.claimedLast) };
  return [...new Set(listed)].sort((a, b) => a - b).reduce(withPageDone, state);
}

/** `cursor` with page `page` recorded as done: the contiguous prefix grows while it can, the rest is kept sorted. */
export function withPageDone<T extends PageWalkState>(cursor: T, page: number): T {
  if (page <= cursor.doneThrough || cursor.donePages.includes(page)) return cursor;
  if (page !== cursor.doneThrough + 1) return { ...cursor, donePages: [...cursor.donePages, page].sort((a, b) => a - b) };
  let doneThrough = page;
  let taken = 0;
  while (taken < cursor.donePages.length && cursor.donePages[taken] === doneThrough + 1) {
    doneThrough++;
    taken++;
  }
  return { ...cursor, doneThrough, donePages: cursor.donePages.slice(taken) };
}

/** Whether the page walk of `cursor` has page `page` done. */
export function isPageDone(cursor: PageWalkState, page: number): boolean {
  return page <= cursor.doneThrough || cursor.donePages.includes(page);
}

function toCursor(row: CursorRowOut): Cursor {
  const walk = pageWalkOf(row.next_url);
  return {
    collection: row.collection,
    run: Number(row.run),
    done: Number(row.done) === 1,
    ...walk,
    walkSince: row.walk_since,
    since: row.since,
    etag: row.etag,
    lastId: row.last_id,
    pages: Number(row.pages),
    items: Number(row.items),
  };
}

export async function findCursor(db: Kysely<Schema>, importId: number, collection: string): Promise<Cursor | undefined> {
  const row = await db.selectFrom('import_cursors').selectAll().where('import_id', '=', importId).where('collection', '=', collection).executeTakeFirst();
  return row ? toCursor(row as CursorRowOut) : undefined;
}

export async function listCursors(db: Kysely<Schema>, importId: number, prefix = ''): Promise<Cursor[]> {
  let query = db.selectFrom('import_cursors').selectAll().where('import_id', '=', importId);
  if (prefix) query = query.where('collection', 'like', `${likePrefix(prefix)}%`);
  const rows = await query.orderBy('collection').execute();
  return rows.map((row) => toCursor(row as CursorRowOut));
}

/**
 * The statement that writes `cursor` (the caller holds the import's lease,
 * and the batch's guard step checks its fence). Inputs: the whole cursor.
 * Stores the cursor row (insert or replace). Returns nothing. The walker
 * keeps the cursor in memory and commits a walk's pages one at a time, so
 * each write carries everything before it.
 */
export function writeCursorStep(db: Kysely<Schema>, importId: number, cursor: Cursor, now: number): Compilable {
  let statement = cursorWrites.get(db);
  if (!statement) {
    statement = prepared(db, (arg) => {
      const values = Object.fromEntries(CURSOR_COLUMNS.map((column, index) => [column, arg(index)])) as never;
      const updates = Object.fromEntries(CURSOR_COLUMNS.slice(2).map((column) => [column, sql.ref(`excluded.${column}`)])) as never;
      return db.insertInto('import_cursors').values(values).onConflict((oc) => oc.columns(['import_id', 'collection']).doUpdateSet(updates));
    });
    cursorWrites.set(db, statement);
  }
  return statement.bind(
    importId,
    cursor.collection,
    cursor.run,
    cursor.done ? 1 : 0,
    JSON.stringify({ lastPage: cursor.lastPage, doneThrough: cursor.doneThrough, donePages: cursor.donePages, claimedLast: cursor.claimedLast }),
    cursor.walkSince,
    cursor.since,
    cursor.etag,
    cursor.lastId,
    cursor.pages,
    cursor.items,
    now,
  );
}

const CURSOR_COLUMNS = ['import_id', 'collection', 'run', 'done', 'next_url', 'walk_since', 'since', 'etag', 'last_id', 'pages', 'items', 'updated_at'] as const;
/** The cursor write of each database, compiled once (it follows every page). */
const cursorWrites = new WeakMap<Kysely<Schema>, PreparedQuery<unknown[], unknown>>();

/** A fresh cursor for `collection` in run `run`, keeping what carries over from an earlier run's. */
export function startCursor(collection: string, run: number, previous: Cursor | undefined): Cursor {
  if (previous && previous.run === run) return previous;
  return {
    collection,
    run,
    done: false,
    lastPage: null,
    doneThrough: 0,
    donePages: [],
    claimedLast: null,
    walkSince: null,
    since: previous?.since ?? null,
    etag: previous?.etag ?? null,
    lastId: previous?.lastId ?? null,
    pages: 0,
    items: 0,
  };
}

/** The columns a cursor starts a run with (see startCursor): the walk's state reset; the ETag, watermark and last id kept. */
const freshWalk = (run: number, now: number) => ({ run, done: 0, next_url: null, walk_since: null, pages: 0, items: 0, updated_at: now });

/**
 * The statement by which a list plans walks that a later step takes, in the
 * batch of the page that named them (the protected-branch list names each
 * branch whose rules are fetched: `protection/<name>`). Inputs: the run and
 * the walks' cursor names. Stores each cursor as this run's and not done
 * (fresh, as startCursor makes it: an earlier run's ETag stays, so a sync
 * asks conditionally); a cursor this run has already is left as it is (a
 * page listed again after a crash keeps the walks' progress). Returns
 * nothing. Why: the names must be durable once the list's cursor says done
 * — a later step that kept them in memory finds none after a crash.
 */
export function planWalksStep(db: Kysely<Schema>, importId: number, run: number, collections: readonly string[], now: number): Compilable | null {
  const unique = [...new Set(collections)];
  if (unique.length === 0) return null;
  return db
    .insertInto('import_cursors')
    .values(unique.map((collection) => ({ import_id: importId, collection, since: null, etag: null, last_id: null, ...freshWalk(run, now) })))
    .onConflict((oc) => oc.columns(['import_id', 'collection']).doUpdateSet(freshWalk(run, now)).where('import_cursors.run', '<>', run));
}

/**
 * The statement that plans again, for a list answered 304 (unchanged), the
 * walks it planned when it last answered: the cursors under `prefix` of the
 * run that wrote the list's cursor `list` become this run's, as
 * planWalksStep makes them. Inputs: the run, the prefix, the list's cursor
 * name. Runs before the batch writes the list's cursor (whose stored run it
 * reads). Stores the cursors; returns nothing. Cursors of older runs (names
 * gone from the list, left by a run that failed before dropping them) are
 * not planned.
 */
export function planWalksAgainStep(db: Kysely<Schema>, importId: number, run: number, walks: { prefix: string; list: string }, now: number): Compilable {
  const listedIn = db.selectFrom('import_cursors').select('run').where('import_id', '=', importId).where('collection', '=', walks.list);
  return db
    .updateTable('import_cursors')
    .set(freshWalk(run, now))
    .where('import_id', '=', importId)
    .where('collection', 'like', `${likePrefix(walks.prefix)}%`)
    .where('run', '<>', run)
    .where('run', '=', listedIn);
}

/** The statement that deletes cursors `collections` (walks no longer planned). Inputs: their names. Returns nothing. */
export function deleteCursorsStep(db: Kysely<Schema>, importId: number, collections: readonly string[]): Compilable | null {
  if (collections.length === 0) return null;
  return db.deleteFrom('import_cursors').where('import_id', '=', importId).where('collection', 'in', [...collections]);
}

/** `prefix` with LIKE's wildcards escaped. */
function likePrefix(prefix: string): string {
  return prefix.replace(/[\\%_]/g, '\\$&');
}
