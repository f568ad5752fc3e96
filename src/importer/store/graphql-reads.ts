import { sql, type ExpressionBuilder } from 'kysely';
import type { Schema } from '../../store/types.js';
import type { ImportState } from '../../store/import-tables.js';
import type { StoredType } from '../types.js';
import { listConditions, type ListFilter } from './list-filters.js';
import type { ApiDatabase, ImportRef } from './read-api.js';

/*
 * The statements of the GitHub-compatible GraphQL endpoint
 * (http/github-api/graphql) that read-api.ts does not already have: keyset
 * pages of stored objects (a connection's `after`/`before` is a position
 * in the order, never an OFFSET), the objects of one issue or pull request,
 * objects by key in batches, imports by id, user profiles in batches, and
 * the lookup of a global node id. All read-only.
 */

/** What a connection orders by: a copied-out column, or GitHub's id (`sort_id`, the tiebreaker of every order). */
export type OrderColumn = 'created_at' | 'updated_at' | 'comments' | 'id';

/** Which stored objects a connection holds: the REST lists' filters (list-filters.ts), all SQL on indexed list columns, and whether merged. */
export interface ObjectSelection extends ListFilter {
  /**
   * Pull requests (or their issue shapes) merged or not: told by the stored
   * JSON's `"merged_at":null` (objects are stored as JSON.stringify writes
   * them), a substring test on the rows the other filters leave.
   */
  merged?: 'merged' | 'unmerged';
}

/** The WHERE of a selection: listConditions, and the `merged` test. */
function selectionConditions(database: ApiDatabase, importId: number, selection: ObjectSelection) {
  const { merged, ...filter } = selection;
  return (eb: ExpressionBuilder<Schema, 'import_objects'>) => {
    const listed = listConditions(database.dialect, importId, filter)(eb);
    if (merged === undefined) return listed;
    const unmergedMark = database.dialect === 'postgres' ? sql<number>`strpos(${sql.ref('data')}, '"merged_at":null')` : sql<number>`instr(${sql.ref('data')}, '"merged_at":null')`;
    return eb.and([listed, merged === 'merged' ? eb(unmergedMark, '=', 0) : eb(unmergedMark, '>', 0)]);
  };
}

/** A position in an order: the sort column's value and GitHub's id, which breaks ties. */
export interface KeysetPosition {
  value: string | number | null;
  key: number;
}

export interface KeysetRequest extends ObjectSelection {
  order: OrderColumn;
  direction: 'asc' | 'desc';
  /** Only rows strictly after this position in the order. */
  after?: KeysetPosition | undefined;
  /** Only rows strictly before this position in the order. */
  before?: KeysetPosition | undefined;
  /** Read from the end of the order backwards (for `last`): rows come in reverse order. */
  fromEnd?: 'from-end' | undefined;
  limit: number;
}

/** One stored object as the endpoint reads it. */
export interface StoredRow {
  type: string;
  key: string;
  number: number | null;
  data: string;
  /** Its position in the order it was read in. */
  position: KeysetPosition;
}

/** The import's objects of `types`, not yet selecting (by the `(import_id, type, number)` index once a number is named). */
function ofTypes(database: ApiDatabase, importId: number, types: readonly StoredType[]) {
  return database.db.selectFrom('import_objects').where('import_id', '=', importId).where('type', 'in', [...types]);
}

/** Inputs: import and selection. Returns how many stored objects it holds: a connection's `totalCount`. */
export async function countSelection(database: ApiDatabase, importId: number, selection: ObjectSelection): Promise<number> {
  const row = await database.db
    .selectFrom('import_objects')
    .where(selectionConditions(database, importId, selection))
    .select((eb) => eb.fn.countAll().as('n'))
    .executeTakeFirst();
  return Number(row?.n ?? 0);
}

/**
 * Inputs: import and request (selection, order, bounds, limit). Returns up
 * to `limit` rows strictly between `after` and `before` in the order (sort
 * column, then GitHub's id, both in `direction`), from its start, or from
 * its end backwards with `fromEnd`. A bound is one row comparison on the
 * columns of a list index (import_id, listed_as, column, sort_id), so page
 * 1,000 is a seek as page 1 is (no OFFSET); a null `comments` (a pull
 * request's without its issue shape) sorts as 0.
 */
export async function keysetPage(database: ApiDatabase, importId: number, request: KeysetRequest): Promise<StoredRow[]> {
  const id = sql.ref('sort_id');
  const column = request.order === 'id' ? null : request.order === 'comments' ? sql<number>`coalesce(${sql.ref('comments')}, 0)` : sql.ref(request.order);
  const forward = request.direction === 'asc';
  let query = database.db
    .selectFrom('import_objects')
    .where(selectionConditions(database, importId, request))
    .select(['type', 'key', 'number', 'data', 'created_at', 'updated_at', 'comments', 'sort_id']);
  const bound = (position: KeysetPosition, later: boolean) => {
    // "later in the order" is a greater value ascending, a smaller one descending.
    const op = sql.raw(later === forward ? '>' : '<');
    if (column === null) return sql<boolean>`${id} ${op} ${position.key}`;
    return sql<boolean>`(${column} ${op} ${position.value} or (${column} = ${position.value} and ${id} ${op} ${position.key}))`;
  };
  if (request.after) query = query.where(bound(request.after, true));
  if (request.before) query = query.where(bound(request.before, false));
  const readDirection = request.fromEnd ? (forward ? 'desc' : 'asc') : request.direction;
  if (column !== null) query = query.orderBy(column, readDirection);
  const rows = await query.orderBy('sort_id', readDirection).limit(request.limit).execute();
  return rows.map((row) => ({
    type: row.type,
    key: row.key,
    number: row.number === null ? null : Number(row.number),
    data: row.data,
    position: {
      value: request.order === 'id' ? null : request.order === 'comments' ? Number(row.comments ?? 0) : (row[request.order] ?? null),
      key: Number(row.sort_id ?? 0),
    },
  }));
}

/**
 * Inputs: import, types and keys. Returns the stored objects of those types
 * with those keys (primary-key lookups), by key: pull requests by id, the
 * objects a node id names.
 */
export async function objectsByKeys(database: ApiDatabase, importId: number, types: readonly StoredType[], keys: readonly string[]): Promise<Map<string, { type: string; data: string }>> {
  if (keys.length === 0) return new Map();
  const rows = await database.db
    .selectFrom('import_objects')
    .select(['type', 'key', 'data'])
    .where('import_id', '=', importId)
    .where('type', 'in', [...types])
    .where('key', 'in', [...new Set(keys)])
    .execute();
  return new Map(rows.map((row) => [row.key, { type: row.type, data: row.data }]));
}

/**
 * Inputs: import, types and numbers. Returns the stored objects of those
 * types with those numbers (by the number index), by number: the pull
 * requests of a page of search results, the issue shapes of pull requests.
 */
export async function objectsByNumbers(database: ApiDatabase, importId: number, types: readonly StoredType[], numbers: readonly number[]): Promise<Map<number, string>> {
  if (numbers.length === 0) return new Map();
  const rows = await ofTypes(database, importId, types)
    .select(['number', 'data'])
    .where('number', 'in', [...new Set(numbers)])
    .orderBy('type')
    .execute();
  const found = new Map<number, string>();
  for (const row of rows) if (!found.has(Number(row.number))) found.set(Number(row.number), row.data);
  return found;
}

/** An import as the endpoint reads it (an ImportRef, with the owner and repo it copies). */
export interface ImportRow extends ImportRef {
  owner: string;
  repo: string;
}

/**
 * Inputs: import ids. Returns those imports (id, name, state, API URL,
 * owner, repo): the import a node id's object belongs to. Pending imports
 * are returned too; the caller decides what it may see.
 */
export async function importsByIds(database: ApiDatabase, ids: readonly number[]): Promise<ImportRow[]> {
  if (ids.length === 0) return [];
  const rows = await database.db
    .selectFrom('imports')
    .select(['id', 'name', 'state', 'api_url', 'owner', 'repo'])
    .where('id', 'in', [...new Set(ids)])
    .execute();
  return rows.map((row) => ({ id: Number(row.id), name: row.name, state: row.state as ImportState, apiUrl: row.api_url, owner: row.owner, repo: row.repo }));
}

/** Inputs: none. Returns every import's id and name (few): those a node id may be looked up in, filtered by the caller's scope. */
export async function importNames(database: ApiDatabase): Promise<{ id: number; name: string }[]> {
  const rows = await database.db.selectFrom('imports').select(['id', 'name']).orderBy('id').execute();
  return rows.map((row) => ({ id: Number(row.id), name: row.name }));
}

/**
 * Inputs: imports, types and key. Returns the objects of those types with
 * that key in those imports (primary-key lookups): what a decoded node id
 * (`Issue` 1001) names, which may be in several imports.
 */
export async function objectsWithKey(database: ApiDatabase, importIds: readonly number[], types: readonly StoredType[], key: string): Promise<{ importId: number; type: string; data: string }[]> {
  if (importIds.length === 0) return [];
  const rows = await database.db
    .selectFrom('import_objects')
    .select(['import_id', 'type', 'data'])
    .where('import_id', 'in', [...importIds])
    .where('type', 'in', [...types])
    .where('key', '=', key)
    .execute();
  return rows.map((row) => ({ importId: Number(row.import_id), type: row.type, data: row.data }));
}

/** Rows a node id's substring scan returns at most: the object itself, and the few that embed it (an issue its labels). */
const NODE_SCAN_ROWS = 50;

/**
 * Inputs: imports, types and a node id. Returns the objects of those types
 * whose JSON has that `node_id` somewhere (a substring match on the stored
 * JSON, which GitHub's serialisation writes as `"node_id":"…"`): the
 * object's own row, and rows embedding it, which the caller tells apart. A
 * scan of those types: the fallback for ids that do not decode to a
 * database id.
 */
export async function objectsWithNodeId(database: ApiDatabase, importIds: readonly number[], types: readonly StoredType[], nodeId: string): Promise<{ importId: number; type: string; data: string }[]> {
  if (importIds.length === 0) return [];
  const needle = `"node_id":${JSON.stringify(nodeId)}`;
  const contains = database.dialect === 'postgres' ? sql<boolean>`strpos(${sql.ref('data')}, ${needle}) > 0` : sql<boolean>`instr(${sql.ref('data')}, ${needle}) > 0`;
  const rows = await database.db
    .selectFrom('import_objects')
    .select(['import_id', 'type', 'data'])
    .where('import_id', 'in', [...importIds])
    .where('type', 'in', [...types])
    .where(contains)
    .orderBy('import_id')
    .limit(NODE_SCAN_ROWS)
    .execute();
  return rows.map((row) => ({ importId: Number(row.import_id), type: row.type, data: row.data }));
}

/**
 * Inputs: an API host and lower-cased logins. Returns the stored profiles
 * found on that host (JSON text), by lower-cased login: a page of authors'
 * `name`s in one statement, from the host the import read them from.
 */
export async function profilesByLogin(database: ApiDatabase, apiHost: string, loginKeys: readonly string[]): Promise<Map<string, string>> {
  if (loginKeys.length === 0) return new Map();
  const rows = await database.db
    .selectFrom('github_users')
    .select(['login_key', 'data'])
    .where('api_host', '=', apiHost)
    .where('login_key', 'in', [...new Set(loginKeys)])
    .where('state', '=', 'found')
    .execute();
  return new Map(rows.filter((row) => row.data !== null).map((row) => [row.login_key, row.data as string]));
}

/**
 * Inputs: import, types and a number. Returns every stored object of those
 * types with that number (JSON text, by the number index), in key order:
 * the few review requests or reviews of one pull request, read whole.
 */
export async function objectsOfNumber(database: ApiDatabase, importId: number, types: readonly StoredType[], number: number): Promise<{ key: string; data: string }[]> {
  const rows = await ofTypes(database, importId, types).where('number', '=', number).select(['key', 'data']).orderBy('key').execute();
  return rows.map((row) => ({ key: row.key, data: row.data }));
}

/**
 * Inputs: none. Returns a stamp of the imports table: how many imports,
 * the highest id and the newest `updated_at` (every change of an import's
 * state, name or sources sets it). A remembered GraphQL answer is valid
 * while this stamp is unchanged (no import added, removed, renamed or
 * moved to another state: which import `repository(owner:, name:)` finds
 * is the same) and each import it read has the same write stamp. One
 * aggregate over the few rows of `imports`.
 */
export async function importsStamp(database: ApiDatabase): Promise<string> {
  const row = await database.db
    .selectFrom('imports')
    .select((eb) => [eb.fn.countAll().as('n'), eb.fn.max('id').as('highest'), eb.fn.max('updated_at').as('newest')])
    .executeTakeFirst();
  return `${row?.n ?? 0} ${row?.highest ?? 'none'} ${row?.newest ?? 'none'}`;
}
