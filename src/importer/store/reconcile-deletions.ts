import type { Kysely } from 'kysely';
import type { Schema } from '../../store/types.js';
import type { StoredType } from '../types.js';
import type { StoredObjectRef } from './deletions.js';

/*
 * The reads of a sync's reconciliation (stages/deletions.ts,
 * stages/full-compare.ts): the repository's GitHub id, and the stored
 * objects a full listing is compared with. The deletions themselves go
 * through deletions.ts.
 */

/** A stored object with its `updated_at` (null for types without one): what was stored after a listing began is not taken as gone. */
export interface StampedRef extends StoredObjectRef {
  updatedAt: string | null;
}

/** Numbers per IN list: well under every database's parameter limit. */
const CHUNK = 500;

/**
 * Inputs: the import. Returns the GitHub id of its repository (the stored
 * repository row's `number`, see types.ts), or null before the first
 * repository stage stored it: `/repositories/{id}` follows a renamed or
 * transferred repository.
 */
export async function storedRepositoryId(db: Kysely<Schema>, importId: number): Promise<number | null> {
  const row = await db.selectFrom('import_objects').select('number').where('import_id', '=', importId).where('type', '=', 'repository').where('key', '=', 'repository').executeTakeFirst();
  const id = row?.number === null || row?.number === undefined ? null : Number(row.number);
  return id !== null && Number.isSafeInteger(id) && id >= 0 ? id : null;
}

/**
 * Inputs: the import, a type, and optionally the numbers (issue or pull
 * request) to look at. Returns every stored object of that type (of those
 * numbers), with key, number and updated_at: a whole-list compare reads
 * its side in one pass and keeps the listed ids in memory (a NOT IN of
 * every id listed would not fit in a statement).
 */
export async function storedStamped(db: Kysely<Schema>, importId: number, type: StoredType, numbers?: readonly number[]): Promise<StampedRef[]> {
  const query = (chunk?: readonly number[]) =>
    db
      .selectFrom('import_objects')
      .select(['key', 'number', 'updated_at'])
      .where('import_id', '=', importId)
      .where('type', '=', type)
      .$if(chunk !== undefined, (q) => q.where('number', 'in', [...chunk!]))
      .execute();
  const rows = [];
  if (numbers === undefined) rows.push(...(await query()));
  else for (let start = 0; start < numbers.length; start += CHUNK) rows.push(...(await query(numbers.slice(start, start + CHUNK))));
  return rows.map((row) => ({ type, key: row.key, number: row.number === null ? null : Number(row.number), updatedAt: row.updated_at }));
}
