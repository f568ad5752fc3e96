import type { Database } from '../../store/database.js';

/*
 * What the read API remembers of a list between requests, per process: its
 * total (the `Link` header's last page; counting costs a walk of every index
 * entry of the list) and its page anchors (the sort key at row offsets
 * already served, from which a later page is a keyset seek instead of a walk
 * from the start). Both are valid while the import's write stamp is the one
 * they were computed under: every committed batch of an import appends an
 * `import_progress` row in its own transaction (importer/store/progress.ts),
 * ids never reused, so the newest row's id changes with every write. Another
 * process's memo is its own; the stamp keeps them all honest.
 */

/** The sort key of the row just before a row offset: its sort column's value (absent for id order) and its id. */
export interface Anchor {
  value?: string | number;
  id: number;
}

/** One list (import, filter) under one write stamp. */
export class ListMemo {
  total: number | undefined;
  /** Per order (`sort direction`), anchors by row offset. */
  readonly #anchors = new Map<string, Map<number, Anchor>>();

  constructor(readonly stamp: string) {}

  /** The anchor at the greatest offset ≤ `offset` for `order`, if any. */
  nearest(order: string, offset: number): { offset: number; anchor: Anchor } | undefined {
    let best: { offset: number; anchor: Anchor } | undefined;
    for (const [at, anchor] of this.#anchors.get(order) ?? []) if (at <= offset && at > (best?.offset ?? 0)) best = { offset: at, anchor };
    return best;
  }

  /** Remembers the anchor at `offset` (a page's end) for `order`, up to MAX_ANCHORS per order. */
  remember(order: string, offset: number, anchor: Anchor): void {
    let anchors = this.#anchors.get(order);
    if (!anchors) this.#anchors.set(order, (anchors = new Map()));
    if (anchors.size < MAX_ANCHORS) anchors.set(offset, anchor);
  }
}

/** Anchors kept per list and order: a page every 100 rows of a 100,000-row list, a few hundred KiB. */
const MAX_ANCHORS = 2_000;
/** Lists remembered per database, the least recently used forgotten first. */
const MAX_LISTS = 500;

const memos = new WeakMap<object, Map<string, ListMemo>>();

/**
 * Inputs: the database, import, the list's key (its filter, as JSON) and the
 * import's current write stamp. Returns the list's memo under that stamp: the
 * one remembered, or a new one when there was none or it was computed under
 * another stamp.
 */
export function listMemo(database: Pick<Database, 'db'>, importId: number, listKey: string, stamp: string): ListMemo {
  let byList = memos.get(database.db);
  if (!byList) memos.set(database.db, (byList = new Map()));
  const key = `${importId} ${listKey}`;
  const found = byList.get(key);
  byList.delete(key);
  const memo = found && found.stamp === stamp ? found : new ListMemo(stamp);
  byList.set(key, memo);
  if (byList.size > MAX_LISTS) byList.delete(byList.keys().next().value as string);
  return memo;
}

/**
 * Inputs: the database and import. Returns the import's write stamp: the id
 * of its newest `import_progress` row (one index seek on
 * `(import_id, id)`), `none` before any.
 */
export async function writeStamp(database: Pick<Database, 'db'>, importId: number): Promise<string> {
  const row = await database.db
    .selectFrom('import_progress')
    .select((eb) => eb.fn.max('id').as('newest'))
    .where('import_id', '=', importId)
    .executeTakeFirst();
  return row?.newest === null || row?.newest === undefined ? 'none' : String(row.newest);
}
