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
  /** Page walk: the last page (from the first page's Link), or, in a since walk, the page within the window. */
  lastPage: number | null;
  /** Pages done, beyond page 1 (sorted). */
  donePages: number[];
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

// next_url holds the page walk's state as JSON ({ lastPage, donePages }): it changes with every page and is read only here.
function toCursor(row: CursorRowOut): Cursor {
  const walk = row.next_url ? (JSON.parse(row.next_url) as { lastPage: number | null; donePages: number[] }) : { lastPage: null, donePages: [] };
  return {
    collection: row.collection,
    run: Number(row.run),
    done: Number(row.done) === 1,
    lastPage: walk.lastPage,
    donePages: walk.donePages,
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
    JSON.stringify({ lastPage: cursor.lastPage, donePages: cursor.donePages }),
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
    donePages: [],
    walkSince: null,
    since: previous?.since ?? null,
    etag: previous?.etag ?? null,
    lastId: previous?.lastId ?? null,
    pages: 0,
    items: 0,
  };
}
