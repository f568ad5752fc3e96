import { sql, type Expression, type SqlBool } from 'kysely';
import type { Database } from '../../store/database.js';
import type { StoredType } from '../types.js';
import { listConditions, listedAs, type ListFilter } from './list-filters.js';
import type { Anchor } from './list-memo.js';

/*
 * The two statements that read one page of a list (read-api.ts listObjects):
 * the page's keys, walked along the list index that serves the order, and
 * then the page's rows by their ids. Split so that neither reads a row it
 * does not answer with: the first reads index entries only (the index holds
 * the import, the list, the sort column and the id), the second fetches the
 * page's rows by id.
 */

type ApiDatabase = Pick<Database, 'db' | 'dialect'>;

/** The column a list orders by before the id (`name` is the lower-cased name labels keep in `state`); the id alone for `id`. */
export const SORT_COLUMNS = { created_at: 'created_at', updated_at: 'updated_at', comments: 'comments', name: 'state', id: undefined } as const;
export type PageSort = keyof typeof SORT_COLUMNS;

/** How a page of keys is found: after `anchor` (the key just before it, when known), skipping `skip` entries, `perPage` of them. */
export interface KeyWalk {
  sort: PageSort;
  direction: 'asc' | 'desc';
  perPage: number;
  skip: number;
  anchor?: Anchor;
}

/**
 * Rows after `anchor` in the order: `(column, sort_id)` beyond the anchor's,
 * as a row-value comparison an index on (…, column, sort_id) ranges over. The
 * comment count alone may be null (a pull request stored before its issue
 * shape): where the dialect sorts nulls after the anchor (SQLite descending,
 * PostgreSQL ascending), they are kept.
 */
function afterAnchor(database: ApiDatabase, walk: KeyWalk, anchor: Anchor): Expression<SqlBool> {
  const beyond = sql.raw(walk.direction === 'desc' ? '<' : '>');
  const column = SORT_COLUMNS[walk.sort];
  if (column === undefined) return sql<SqlBool>`sort_id ${beyond} ${anchor.id}`;
  const after = sql<SqlBool>`(${sql.ref(column)}, sort_id) ${beyond} (${anchor.value}, ${anchor.id})`;
  const nullsAfter = column === 'comments' && (database.dialect === 'sqlite') === (walk.direction === 'desc');
  return nullsAfter ? sql<SqlBool>`(${after} OR ${sql.ref(column)} IS NULL)` : after;
}

/**
 * Inputs: import, filter, and the walk (order, anchor, skip, page size).
 * Returns the page's keys in order: each row's id and sort value, read from
 * the index entries of the list (skipping `skip` of them after the anchor,
 * entries only), never a row of the table for the unfiltered lists.
 */
export async function pageKeys(database: ApiDatabase, importId: number, filter: ListFilter, walk: KeyWalk): Promise<(Anchor & { id: number })[]> {
  const column = SORT_COLUMNS[walk.sort];
  let query = database.db.selectFrom('import_objects').select('sort_id').where(listConditions(database.dialect, importId, filter));
  if (walk.anchor) query = query.where(afterAnchor(database, walk, walk.anchor));
  if (column !== undefined) query = query.select(sql<string | number | null>`${sql.ref(column)}`.as('value')).orderBy(column, walk.direction);
  const rows = (await query.orderBy('sort_id', walk.direction).limit(walk.perPage).offset(walk.skip).execute()) as { sort_id: number | string | null; value?: string | number | null }[];
  return rows.map((row) => ({ id: Number(row.sort_id), ...(row.value === null || row.value === undefined ? {} : { value: typeof row.value === 'string' ? row.value : Number(row.value) }) }));
}

/**
 * Inputs: import, the list's types and the page's ids. Returns the rows
 * (JSON text and number) with those ids, by id: one seek each on the
 * (import_id, listed_as, sort_id) index.
 */
export async function rowsByIds(database: ApiDatabase, importId: number, types: readonly StoredType[], ids: readonly number[]): Promise<Map<number, { data: string; number: number | null }>> {
  if (ids.length === 0) return new Map();
  const rows = await database.db
    .selectFrom('import_objects')
    .select(['sort_id', 'data', 'number'])
    .where('import_id', '=', importId)
    .where('listed_as', 'in', listedAs(types))
    .where('type', 'in', [...types])
    .where('sort_id', 'in', [...ids])
    .execute();
  return new Map(rows.map((row) => [Number(row.sort_id), { data: row.data, number: row.number === null ? null : Number(row.number) }]));
}
