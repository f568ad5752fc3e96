import { sql, type Kysely } from 'kysely';
import { requestedChanges } from './sql.js';
import type { Schema } from './types.js';

/** A source a request was recorded for by requestByMatchKeys(). */
export interface MatchedRequest {
  sourceId: number;
  name: string;
  url: string;
  /** The storage shard holding its mirror (null: not placed yet). */
  shard: string | null;
  /** The new requested_seq. */
  requestedSeq: number;
}

type Row = { source_id: unknown; requested_seq: unknown; name: string; url: string; shard_id: string | null };

/**
 * Records a request (the same change as RegistryRepository.request) on every
 * enabled source whose match key is among `keys`, in one UPDATE … RETURNING
 * statement that also returns each source's name and URL. This is the
 * webhook hot path: one statement instead of a lookup plus a write.
 */
export async function requestByMatchKeys(db: Kysely<Schema>, keys: readonly string[], now: Date): Promise<MatchedRequest[]> {
  const unique = [...new Set(keys)].filter(Boolean);
  if (unique.length === 0) return [];
  const rows = await buildQuery(db, unique, now.getTime()).execute();
  return (rows as Row[])
    .map((row) => ({ sourceId: Number(row.source_id), name: row.name, url: row.url, shard: row.shard_id, requestedSeq: Number(row.requested_seq) }))
    .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
}

function buildQuery(db: Kysely<Schema>, keys: string[], nowMs: number) {
  return db
    .updateTable('registry')
    .set(requestedChanges(nowMs))
    .where('source_id', 'in', (eb) =>
      eb.selectFrom('sources').select('sources.id').where('sources.match_key', 'in', keys).where('sources.enabled', '=', 1),
    )
    .returning([
      'registry.source_id',
      'registry.requested_seq',
      sql<string>`(select s.name from sources s where s.id = registry.source_id)`.as('name'),
      sql<string>`(select s.url from sources s where s.id = registry.source_id)`.as('url'),
      sql<string | null>`(select s.shard_id from sources s where s.id = registry.source_id)`.as('shard_id'),
    ]);
}
