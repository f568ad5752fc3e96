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

export async function getCursor(db: Kysely<Schema>, importId: number, collection: string): Promise<Cursor | undefined> {
  const row = await db.selectFrom('import_cursors').selectAll().where('import_id', '=', importId).where('collection', '=', collection).executeTakeFirst();
  return row ? toCursor(row as CursorRowOut) : undefined;
}

export async function listCursors(db: Kysely<Schema>, importId: number, prefix = ''): Promise<Cursor[]> {
  let query = db.selectFrom('import_cursors').selectAll().where('import_id', '=', importId);
  if (prefix) query = query.where('collection', 'like', `${prefix.replace(/[\\%_]/g, '\\$&')}%`);
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
