import { type Compilable, type Kysely } from 'kysely';
import type { Schema } from '../../store/types.js';

/** Something that could not be fetched or stored, listed in the status (never silently dropped). */
export interface ImportFailure {
  type: string;
  id: string;
  error: string;
}

/** Records (or replaces) the failure of object `key` of `type`. Inputs: the failure. Stores an import_failures row. */
export function recordFailureStep(db: Kysely<Schema>, importId: number, run: number, failure: ImportFailure, now: number): Compilable {
  const values = { import_id: importId, type: failure.type, key: failure.id, run, error: failure.error.slice(0, 1000), at: now };
  return db
    .insertInto('import_failures')
    .values(values)
    .onConflict((oc) => oc.columns(['import_id', 'type', 'key']).doUpdateSet({ run, error: values.error, at: now }));
}

/** Forgets the failure of an object that has now been imported. Inputs: type and key. Deletes its row if any. */
export function clearFailureStep(db: Kysely<Schema>, importId: number, type: string, key: string): Compilable {
  return db.deleteFrom('import_failures').where('import_id', '=', importId).where('type', '=', type).where('key', '=', key);
}

export async function listFailures(db: Kysely<Schema>, importId: number): Promise<ImportFailure[]> {
  const rows = await db.selectFrom('import_failures').select(['type', 'key', 'error']).where('import_id', '=', importId).orderBy('type').orderBy('key').execute();
  return rows.map((row) => ({ type: row.type, id: row.key, error: row.error }));
}

/** Failures per type (what was fetched, or tried, but not imported). */
export async function countFailures(db: Kysely<Schema>, importId: number): Promise<Map<string, number>> {
  const rows = await db.selectFrom('import_failures').select(['type', (eb) => eb.fn.countAll<number>().as('n')]).where('import_id', '=', importId).groupBy('type').execute();
  return new Map(rows.map((row) => [row.type, Number(row.n)]));
}
