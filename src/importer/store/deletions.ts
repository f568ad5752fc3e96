import type { Compilable, Kysely } from 'kysely';
import { appendChangeSteps, type ChangeInput } from '../../store/change-log.js';
import type { Schema } from '../../store/types.js';
import type { StoredType } from '../types.js';
import { isPublished, upsertObjectSteps } from './objects.js';

/*
 * Objects that are gone upstream leave the copy: a webhook said so and the
 * API confirmed it, or a sync's full listing no longer gives them. Each
 * deletion of a published type is also a change (`action: deleted`), so a
 * feed tells its consumers; the feed finds the row gone and sends
 * `object: null`.
 */

/** One stored object, as found by storedObjects. */
export interface StoredObjectRef {
  type: StoredType;
  key: string;
  number: number | null;
}

/**
 * Which stored objects of one type: by key, by number (an issue's
 * comments), by parent (a release's assets); and, with `notInRun`, only
 * those the given run did not write (a list answered whole in that run left
 * them out).
 */
export interface ObjectSelection {
  type: StoredType;
  keys?: readonly string[];
  numbers?: readonly number[];
  parents?: readonly number[];
  notInRun?: number;
}

/** Keys per IN list: well under every database's parameter limit. */
const CHUNK = 500;

/**
 * Inputs: the import and a selection (an empty keys, numbers or parents
 * list selects nothing). Returns the stored objects it selects, with their
 * numbers (for the change's subject).
 */
export async function storedObjects(db: Kysely<Schema>, importId: number, selection: ObjectSelection): Promise<StoredObjectRef[]> {
  const { type, keys, numbers, parents, notInRun } = selection;
  const base = () =>
    db
      .selectFrom('import_objects')
      .select(['key', 'number'])
      .where('import_id', '=', importId)
      .where('type', '=', type)
      .$if(notInRun !== undefined, (query) => query.where('run', '<>', notInRun!));
  // One IN list per chunk of what selects (keys, else numbers, else parents), or all of the type.
  const queries = keys
    ? chunks(keys).map((chunk) => base().where('key', 'in', chunk))
    : numbers
      ? chunks(numbers).map((chunk) => base().where('number', 'in', chunk))
      : parents
        ? chunks(parents).map((chunk) => base().where('parent', 'in', chunk))
        : [base()];
  const found: StoredObjectRef[] = [];
  for (const query of queries) {
    for (const row of await query.execute()) found.push({ type, key: row.key, number: row.number === null ? null : Number(row.number) });
  }
  return found;
}

/** `values` in lists of CHUNK (none for an empty list: it selects nothing). */
function chunks<T>(values: readonly T[]): T[][] {
  const out: T[][] = [];
  for (let start = 0; start < values.length; start += CHUNK) out.push(values.slice(start, start + CHUNK));
  return out;
}

/**
 * The statements that delete `objects` from import `importId` and append a
 * `deleted` change for each of a published type, to run in one batch
 * behind the import's guard (like every import write). Inputs: the import's
 * id and name, the objects. Empty when there is nothing to delete.
 */
export function deleteObjectsSteps(db: Kysely<Schema>, importId: number, importName: string, objects: readonly StoredObjectRef[], nowMs: number): Compilable[] {
  const byType = new Map<StoredType, string[]>();
  for (const object of objects) {
    const keys = byType.get(object.type) ?? [];
    keys.push(object.key);
    byType.set(object.type, keys);
  }
  const steps: Compilable[] = [];
  for (const [type, keys] of byType) {
    for (const chunk of chunks(keys)) steps.push(db.deleteFrom('import_objects').where('import_id', '=', importId).where('type', '=', type).where('key', 'in', chunk));
  }
  const changes: ChangeInput[] = objects
    .filter((object) => isPublished(object.type))
    .map((object) => ({
      type: `dev.forgesync.import.${object.type}`,
      module: 'importer',
      scope: importName,
      key: `${importName} ${object.type} ${object.key}`,
      subject: object.number !== null ? `${object.type}/${object.number}` : `${object.type}/${object.key}`,
      data: { action: 'deleted', number: object.number },
      object: { importId, type: object.type, key: object.key },
    }));
  // A deleted issue's number answers 410, as GitHub's does, even when it was the highest (see highestNumber).
  const markers = objects.filter((object) => object.type === 'issue' && object.number !== null).map((object) => ({ type: 'issue_deleted' as const, key: String(object.number), number: object.number, data: {} }));
  return [...steps, ...upsertObjectSteps(db, importId, 0, markers), ...appendChangeSteps(db, changes, nowMs)];
}
