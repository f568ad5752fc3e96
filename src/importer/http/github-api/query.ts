import { sql, type RawBuilder } from 'kysely';
import type { StoredType } from '../../types.js';
import type { ApiDatabase } from './lookup.js';
import { offsetOf, type Page } from './pagination.js';

export type Direction = 'asc' | 'desc';

/** What a list sorts by: a copied-out column, or GitHub's id (the key, as a number). */
export type SortKey = 'created_at' | 'updated_at' | 'comments' | 'id';

/** Which stored objects a list holds, and in what order. */
export interface ObjectFilter {
  types: readonly StoredType[];
  /** Only objects of this issue / PR / milestone number. */
  number?: number;
  /** `open` or `closed` (the `state` column); `all` or unset: either. */
  state?: 'open' | 'closed' | 'all';
  /** Lower-cased label names that must all be present. */
  labels?: readonly string[];
  /** `updated_at >= since`, an ISO 8601 time in GitHub's form (`…T12:00:00Z`). */
  since?: string;
}

export interface ListRequest extends ObjectFilter {
  sort: SortKey;
  direction: Direction;
  page: Page;
}

/** A page of stored JSON (text, as stored) and how many objects the whole list has. */
export interface ListResult {
  data: string[];
  /** The `number` column of each (the issue an event or comment belongs to). */
  numbers: (number | null)[];
  total: number;
}

/** The key as a number: GitHub's ids grow with time, so this is id order. */
function keyAsNumber(database: ApiDatabase): RawBuilder<number> {
  return sql<number>`cast(${sql.ref('key')} as ${sql.raw(database.dialect === 'postgres' ? 'bigint' : 'integer')})`;
}

/** `labels` contains `needle` (an exact substring; no LIKE patterns to escape). */
function labelsContain(database: ApiDatabase, needle: string): RawBuilder<boolean> {
  return database.dialect === 'postgres'
    ? sql<boolean>`strpos(${sql.ref('labels')}, ${needle}) > 0`
    : sql<boolean>`instr(${sql.ref('labels')}, ${needle}) > 0`;
}

function filtered(database: ApiDatabase, importId: number, filter: ObjectFilter) {
  let query = database.db
    .selectFrom('import_objects')
    .where('import_id', '=', importId)
    .where('type', 'in', [...filter.types]);
  if (filter.number !== undefined) query = query.where('number', '=', filter.number);
  if (filter.state && filter.state !== 'all') query = query.where('state', '=', filter.state);
  if (filter.since !== undefined) query = query.where('updated_at', '>=', filter.since);
  for (const label of filter.labels ?? []) query = query.where(labelsContain(database, `\n${label}\n`));
  return query;
}

/** How many stored objects match `filter`. */
export async function countObjects(database: ApiDatabase, importId: number, filter: ObjectFilter): Promise<number> {
  const row = await filtered(database, importId, filter)
    .select((eb) => eb.fn.countAll().as('n'))
    .executeTakeFirst();
  return Number(row?.n ?? 0);
}

/** One page of a list, sorted by `sort` then by id (both in `direction`). */
export async function listObjects(database: ApiDatabase, importId: number, request: ListRequest): Promise<ListResult> {
  const total = await countObjects(database, importId, request);
  const offset = offsetOf(request.page);
  if (offset >= total) return { data: [], numbers: [], total };
  let query = filtered(database, importId, request).select(['data', 'number']);
  if (request.sort !== 'id') query = query.orderBy(request.sort, request.direction);
  const rows = await query
    .orderBy(keyAsNumber(database), request.direction)
    .limit(request.page.perPage)
    .offset(offset)
    .execute();
  return { data: rows.map((row) => row.data), numbers: rows.map((row) => (row.number === null ? null : Number(row.number))), total };
}

/** The stored issue shapes (issues and pull requests) with these numbers, by number. */
export async function issuesByNumber(database: ApiDatabase, importId: number, numbers: readonly number[]): Promise<Map<number, string>> {
  if (numbers.length === 0) return new Map();
  const rows = await filtered(database, importId, { types: ['issue', 'pull_request_issue'] })
    .select(['number', 'data'])
    .where('number', 'in', [...new Set(numbers)])
    .execute();
  return new Map(rows.map((row) => [Number(row.number), row.data]));
}

/** Every stored object matching `filter` (for the short lists sorted on fields only the JSON has), in id order. */
export async function allObjects(database: ApiDatabase, importId: number, filter: ObjectFilter): Promise<string[]> {
  const rows = await filtered(database, importId, filter).select('data').orderBy(keyAsNumber(database)).execute();
  return rows.map((row) => row.data);
}

/** The stored object of one of `types` with `number` (JSON text), if any. */
export async function objectByNumber(database: ApiDatabase, importId: number, types: readonly StoredType[], number: number): Promise<string | undefined> {
  const row = await filtered(database, importId, { types, number }).select('data').orderBy('type').executeTakeFirst();
  return row?.data;
}

/** The stored object of `type` with `key` (JSON text), if any. */
export async function objectByKey(database: ApiDatabase, importId: number, type: StoredType, key: string): Promise<string | undefined> {
  const row = await database.db
    .selectFrom('import_objects')
    .select('data')
    .where('import_id', '=', importId)
    .where('type', '=', type)
    .where('key', '=', key)
    .executeTakeFirst();
  return row?.data;
}
