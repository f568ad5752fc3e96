/**
 * What a full sync reads to export the current state: the sources (with
 * their mirror and last sync outcome, from the replication registry) and
 * the imported objects, a page at a time in key order, from a position
 * (exclusive for objects, inclusive for sources: a source's refs may be
 * exported over several chunks). Read only; the position a chunk reached
 * is stored by store/run-steps.ts (fullChunkStep).
 */
import { sql, type Kysely } from 'kysely';
import type { Schema } from '../../store/types.js';

/** A source as a full sync exports it. */
export interface ExportedSource {
  name: string;
  mirror_path: string | null;
  last_synced_at: number | string | null;
  last_failure_at: number | string | null;
  last_failure: string | null;
}

/** An imported object as a full sync exports it, with its import's name. */
export interface ExportedObject {
  import_id: number | string;
  type: string;
  key: string;
  number: number | string | null;
  /** The object as stored (JSON). */
  data: string;
  /** The import's name. */
  name: string;
}

/** Up to `limit` sources named `fromName` or after (all when null), by name. */
export async function sourcesPage(db: Kysely<Schema>, fromName: string | null, limit: number): Promise<ExportedSource[]> {
  let query = db
    .selectFrom('sources as s')
    .innerJoin('registry as r', 'r.source_id', 's.id')
    .select(['s.name', 'r.mirror_path', 'r.last_synced_at', 'r.last_failure_at', 'r.last_failure'])
    .orderBy('s.name')
    .limit(limit);
  if (fromName !== null) query = query.where('s.name', '>=', fromName);
  return query.execute();
}

/**
 * Up to `limit` imported objects after `after` (import id, type, key; from
 * the first when null), in that order, leaving out the types in
 * `excludeTypes` (the importer's own bookkeeping). The row comparison keeps
 * each page one range scan of the table's key.
 */
export async function importObjectsPage(db: Kysely<Schema>, page: { after: [importId: number, type: string, key: string] | null; limit: number; excludeTypes: readonly string[] }): Promise<ExportedObject[]> {
  let query = db
    .selectFrom('import_objects as o')
    .innerJoin('imports as i', 'i.id', 'o.import_id')
    .select(['o.import_id', 'o.type', 'o.key', 'o.number', 'o.data', 'i.name'])
    .where('o.type', 'not in', [...page.excludeTypes])
    .orderBy('o.import_id')
    .orderBy('o.type')
    .orderBy('o.key')
    .limit(page.limit);
  if (page.after) {
    const [id, type, key] = page.after;
    query = query.where(sql<boolean>`(o.import_id, o.type, o.key) > (${id}, ${type}, ${key})`);
  }
  return query.execute();
}
