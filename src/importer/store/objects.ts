import { sql, type Compilable, type Kysely } from 'kysely';
import type { ChangeInput } from '../../store/change-log.js';
import { prepared, type PreparedQuery } from '../../store/sql.js';
import type { Schema } from '../../store/types.js';
import type { StoredType } from '../types.js';
import { LIST_COLUMNS, listColumns, newlineList } from '../../store/import-list-columns.js';

/** One object to store (see types.ts for what each type keeps in which column). */
export interface ObjectRow {
  type: StoredType;
  key: string;
  number?: number | null;
  parent?: number | null;
  state?: string | null;
  createdAt?: string | null;
  updatedAt?: string | null;
  /** Label names; stored lower-cased between newlines. */
  labels?: readonly string[] | null;
  comments?: number | null;
  data: unknown;
}

/** Rows per INSERT: 20 parameters each, well under SQLite's and PostgreSQL's limits. */
const CHUNK = 100;
const COLUMNS = ['import_id', 'type', 'key', 'number', 'parent', 'state', 'created_at', 'updated_at', 'labels', 'comments', 'run', 'data', ...LIST_COLUMNS] as const;

/**
 * Whether the row being written is not older than the stored one (by
 * `updated_at`, GitHub's ISO timestamps compare as text; either missing:
 * yes). A webhook's refresh and a sync's page can carry the same object,
 * fetched at different times: whichever commits last, the newer copy stays.
 */
const IS_FRESHER = sql`(excluded.updated_at is null or import_objects.updated_at is null or excluded.updated_at >= import_objects.updated_at)`;
const fresher = (column: string) => sql<any>`case when ${IS_FRESHER} then ${sql.ref(`excluded.${column}`)} else ${sql.ref(`import_objects.${column}`)} end`;

/**
 * The upsert of `rows` rows, compiled once per row count and database (a
 * page's insert is the hot statement of an import; Kysely would build and
 * compile it anew for every page). Inputs: the rows' columns in COLUMNS
 * order. Stores one import_objects row each, replacing the stored one of
 * the same (import, type, key). Returns nothing.
 */
const upserts = new WeakMap<Kysely<Schema>, Map<number, PreparedQuery<unknown[], unknown>>>();
function upsertStatement(db: Kysely<Schema>, rows: number): PreparedQuery<unknown[], unknown> {
  let byCount = upserts.get(db);
  if (!byCount) upserts.set(db, (byCount = new Map()));
  let statement = byCount.get(rows);
  if (!statement) {
    statement = prepared<unknown[], unknown>(db, (arg) =>
      db
        .insertInto('import_objects')
        .values(Array.from({ length: rows }, (_, row) => Object.fromEntries(COLUMNS.map((column, index) => [column, arg(row * COLUMNS.length + index)])) as never))
        .onConflict((oc) =>
          oc.columns(['import_id', 'type', 'key']).doUpdateSet({
            number: fresher('number'),
            parent: fresher('parent'),
            state: fresher('state'),
            created_at: fresher('created_at'),
            updated_at: fresher('updated_at'),
            labels: fresher('labels'),
            // A pull request's count comes from its issue shape (pullCommentsStep): a rewrite of the pull keeps it.
            comments: sql`case when ${IS_FRESHER} then coalesce(excluded.comments, import_objects.comments) else import_objects.comments end`,
            // The run that listed it, even when it kept the newer copy: the object is there upstream.
            run: sql`excluded.run`,
            data: fresher('data'),
            ...Object.fromEntries(LIST_COLUMNS.map((column) => [column, fresher(column)])),
          }),
        ),
    );
    byCount.set(rows, statement);
  }
  return statement;
}

/**
 * The statements that upsert `rows` for run `run`, keyed by (import, type,
 * key): a second write of the same object (a re-fetched page, a sync)
 * replaces it.
 */
export function upsertObjectSteps(db: Kysely<Schema>, importId: number, run: number, rows: readonly ObjectRow[]): Compilable[] {
  const unique = new Map<string, ObjectRow>();
  // A page can carry one object twice (it moved while being listed): the last copy wins, once.
  for (const row of rows) unique.set(`${row.type}\u0000${row.key}`, row);
  const values: unknown[] = [];
  for (const row of unique.values()) {
    values.push(
      importId,
      row.type,
      row.key,
      row.number ?? null,
      row.parent ?? null,
      row.state ?? null,
      row.createdAt ?? null,
      row.updatedAt ?? null,
      row.labels ? newlineList(row.labels) : null,
      row.comments ?? null,
      run,
      JSON.stringify(row.data),
      ...LIST_COLUMNS.map((column) => listColumns(row.type, row.key, row.data)[column]),
    );
  }
  const steps: Compilable[] = [];
  const width = COLUMNS.length;
  for (let start = 0; start < values.length; start += CHUNK * width) {
    const chunk = values.slice(start, start + CHUNK * width);
    steps.push(upsertStatement(db, chunk.length / width).bind(...chunk));
  }
  const shapes = [...unique.values()].filter((row) => row.type === 'pull_request_issue' && typeof row.number === 'number').map((row) => row.number as number);
  if (shapes.length > 0) steps.push(pullCommentsStep(db, importId, shapes));
  return steps;
}

/**
 * The statement that copies the comment count of the pull requests'
 * issue shapes numbered `numbers` onto their `pull_request` rows (GitHub
 * counts a pull request's comments on its issue; `/pulls?sort=popularity`
 * orders by that count through the pulls' own index). Runs after the
 * upserts of the same batch. Inputs: import and PR numbers. Returns nothing.
 */
function pullCommentsStep(db: Kysely<Schema>, importId: number, numbers: readonly number[]): Compilable {
  return db
    .updateTable('import_objects')
    .set({
      comments: (eb) =>
        eb
          .selectFrom('import_objects as shape')
          .select('shape.comments')
          .whereRef('shape.import_id', '=', 'import_objects.import_id')
          .where('shape.type', '=', 'pull_request_issue')
          .whereRef('shape.number', '=', 'import_objects.number'),
    })
    .where('import_id', '=', importId)
    .where('type', '=', 'pull_request')
    .where('number', 'in', [...new Set(numbers)]);
}

/** The repository as GitHub last gave it (`GET /repos/{o}/{r}`), once the first stage stored it. */
export async function storedRepository(db: Kysely<Schema>, importId: number): Promise<Record<string, unknown> | undefined> {
  const row = await db.selectFrom('import_objects').select('data').where('import_id', '=', importId).where('type', '=', 'repository').where('key', '=', 'repository').executeTakeFirst();
  return row ? (JSON.parse(row.data) as Record<string, unknown>) : undefined;
}

/** Inputs: import, type, key. Returns the object's stored JSON, or undefined when none is stored. */
export async function objectData(db: Kysely<Schema>, importId: number, type: StoredType, key: string): Promise<string | undefined> {
  const row = await db.selectFrom('import_objects').select('data').where('import_id', '=', importId).where('type', '=', type).where('key', '=', key).executeTakeFirst();
  return row?.data;
}

/** Stored objects per type (every type stored, internal ones included). */
export async function countObjects(db: Kysely<Schema>, importId: number, run?: number): Promise<Map<string, number>> {
  let query = db.selectFrom('import_objects').select(['type', sql<number>`count(*)`.as('n')]).where('import_id', '=', importId);
  if (run !== undefined) query = query.where('run', '=', run);
  const rows = await query.groupBy('type').execute();
  return new Map(rows.map((row) => [row.type, Number(row.n)]));
}

/** The stored objects of a type with the given numbers (for patches such as merged_by). */
export async function objectsByNumber(db: Kysely<Schema>, importId: number, type: StoredType, numbers: readonly number[]): Promise<{ key: string; number: number; data: string }[]> {
  if (numbers.length === 0) return [];
  const rows = await db
    .selectFrom('import_objects')
    .select(['key', 'number', 'data'])
    .where('import_id', '=', importId)
    .where('type', '=', type)
    .where('number', 'in', [...numbers])
    .execute();
  return rows.map((row) => ({ key: row.key, number: Number(row.number), data: row.data }));
}

/** Numbers of the objects of `type` written in run `run` (e.g. the pull requests a sync saw change). */
export async function numbersWritten(db: Kysely<Schema>, importId: number, type: StoredType, run: number | null): Promise<number[]> {
  let query = db.selectFrom('import_objects').select('number').where('import_id', '=', importId).where('type', '=', type);
  if (run !== null) query = query.where('run', '=', run);
  const rows = await query.orderBy('number').execute();
  return rows.map((row) => Number(row.number));
}

/** Internal rows are the importer's own bookkeeping: they are not changes anyone else sees. */
const UNPUBLISHED: ReadonlySet<StoredType> = new Set(['repository', 'pull_request_issue', 'collaborator_direct', 'collaborator_outside', 'issue_deleted']);

/** Whether changes to objects of `type` go to the change log (and so to the feeds). */
export const isPublished = (type: StoredType): boolean => !UNPUBLISHED.has(type);

/**
 * The change log entries for storing `rows` in import `importName`: one
 * per object that is new (`created`) or differs from its stored copy
 * (`updated`: another `updated_at`, or for types without one, other JSON).
 * An object written again unchanged (a re-fetched page, a sync that lists
 * it again) records nothing. Read before the batch that stores the rows;
 * the import's lease keeps anyone else from writing them meanwhile.
 */
export async function objectChanges(db: Kysely<Schema>, importId: number, importName: string, rows: readonly ObjectRow[]): Promise<ChangeInput[]> {
  const byType = new Map<StoredType, Map<string, ObjectRow>>();
  for (const row of rows) {
    if (!isPublished(row.type)) continue;
    let keys = byType.get(row.type);
    if (!keys) byType.set(row.type, (keys = new Map()));
    keys.set(row.key, row);
  }
  const changes: ChangeInput[] = [];
  for (const [type, keys] of byType) {
    const stored = new Map<string, { updated_at: string | null; data: string | null }>();
    const wanted = [...keys.keys()];
    for (let start = 0; start < wanted.length; start += 500) {
      const found = await db
        .selectFrom('import_objects')
        .select(['key', 'updated_at', sql<string | null>`case when updated_at is null then data end`.as('data')])
        .where('import_id', '=', importId)
        .where('type', '=', type)
        .where('key', 'in', wanted.slice(start, start + 500))
        .execute();
      for (const row of found) stored.set(row.key, row);
    }
    for (const [key, row] of keys) {
      const old = stored.get(key);
      const updatedAt = row.updatedAt ?? null;
      // Not newer (the same version, or an older one the upsert keeps out) is no change.
      const same = old !== undefined && (updatedAt !== null && old.updated_at !== null ? updatedAt <= old.updated_at : old.updated_at === null && updatedAt === null && old.data === JSON.stringify(row.data));
      if (same) continue;
      changes.push({
        type: `dev.forgesync.import.${type}`,
        module: 'importer',
        scope: importName,
        key: `${importName} ${type} ${key}`,
        subject: row.number !== null && row.number !== undefined ? `${type}/${row.number}` : `${type}/${key}`,
        data: { action: old === undefined ? 'created' : 'updated', number: row.number ?? null },
        object: { importId, type, key },
      });
    }
  }
  return changes;
}
