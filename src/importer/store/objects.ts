import { sql, type Compilable, type Kysely } from 'kysely';
import type { Schema } from '../../store/types.js';
import type { StoredType } from '../types.js';

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

/** Rows per INSERT: 11 parameters each, well under SQLite's and PostgreSQL's limits. */
const CHUNK = 200;

/**
 * The statements that upsert `rows` for run `run`, keyed by (import, type,
 * key): a second write of the same object (a re-fetched page, a sync)
 * replaces it. Inputs: the rows. Stores: one import_objects row each. Returns nothing.
 */
export function upsertObjectSteps(db: Kysely<Schema>, importId: number, run: number, rows: readonly ObjectRow[]): Compilable[] {
  const unique = new Map<string, ObjectRow>();
  // A page can carry one object twice (it moved while being listed): the last copy wins, once.
  for (const row of rows) unique.set(`${row.type}\u0000${row.key}`, row);
  const values = [...unique.values()].map((row) => ({
    import_id: importId,
    type: row.type,
    key: row.key,
    number: row.number ?? null,
    parent: row.parent ?? null,
    state: row.state ?? null,
    created_at: row.createdAt ?? null,
    updated_at: row.updatedAt ?? null,
    labels: row.labels ? `\n${row.labels.map((name) => name.toLowerCase()).join('\n')}\n` : null,
    comments: row.comments ?? null,
    run,
    data: JSON.stringify(row.data),
  }));
  const steps: Compilable[] = [];
  for (let i = 0; i < values.length; i += CHUNK) {
    steps.push(
      db
        .insertInto('import_objects')
        .values(values.slice(i, i + CHUNK))
        .onConflict((oc) =>
          oc.columns(['import_id', 'type', 'key']).doUpdateSet({
            number: sql`excluded.number`,
            parent: sql`excluded.parent`,
            state: sql`excluded.state`,
            created_at: sql`excluded.created_at`,
            updated_at: sql`excluded.updated_at`,
            labels: sql`excluded.labels`,
            comments: sql`excluded.comments`,
            run: sql`excluded.run`,
            data: sql`excluded.data`,
          }),
        ),
    );
  }
  return steps;
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
