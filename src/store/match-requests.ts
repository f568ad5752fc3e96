import { sql, type Kysely } from 'kysely';
import { requestedChanges } from './sql.js';
import type { StoreDialect } from './database.js';
import type { Schema } from './types.js';

/** A source a request was recorded for by requestByMatchKeys(). */
export interface MatchedRequest {
  sourceId: number;
  name: string;
  url: string;
  /** The storage shard holding its mirror (null: not placed yet). */
  shard: string | null;
  /** The shard it is moving to, or null. */
  moveTo: string | null;
  /** The new requested_seq. */
  requestedSeq: number;
  /**
   * Whether an earlier request was still waiting (pending, not served yet):
   * its nudge, or the scheduler's next pass (the row is due), serves this
   * one too, so it needs no nudge of its own.
   */
  alreadyWaiting: boolean;
}

type Row = { source_id: unknown; requested_seq: unknown; completed_seq: unknown; state: string; name: string; url: string; shard_id: string | null; move_to: string | null; match_key: string };

/**
 * Records a request (the same change as RegistryRepository.request) on every
 * enabled source whose match key is among `keys`, in one UPDATE … RETURNING
 * statement that also returns each source's name and URL. This is the
 * webhook hot path: one statement instead of a lookup plus a write.
 */
export async function requestByMatchKeys(db: Kysely<Schema>, dialect: StoreDialect, keys: readonly string[], now: Date): Promise<MatchedRequest[]> {
  return (await requestByMatchKeySets(db, dialect, [keys], now))[0]!;
}

/**
 * requestByMatchKeys for several deliveries at once (a group commit of
 * concurrent webhooks): one UPDATE for the union of their keys, each source
 * counting one request per set that names it (as if each had run alone);
 * then each set gets the sources its own keys match.
 */
export async function requestByMatchKeySets(db: Kysely<Schema>, dialect: StoreDialect, keySets: readonly (readonly string[])[], now: Date): Promise<MatchedRequest[][]> {
  const sets = keySets.map((keys) => new Set(keys.filter(Boolean)));
  const requests = new Map<string, number>();
  for (const set of sets) for (const key of set) requests.set(key, (requests.get(key) ?? 0) + 1);
  if (requests.size === 0) return sets.map(() => []);
  const rows = (await buildQuery(db, dialect, requests, now.getTime()).execute()) as Row[];
  const matched = rows
    .map((row) => {
      const requestedSeq = Number(row.requested_seq);
      const before = requestedSeq - (requests.get(row.match_key) ?? 1);
      return {
        key: row.match_key,
        request: { sourceId: Number(row.source_id), name: row.name, url: row.url, shard: row.shard_id, moveTo: row.move_to, requestedSeq, alreadyWaiting: row.state === 'pending' && before > Number(row.completed_seq) },
      };
    })
    .sort((a, b) => (a.request.name < b.request.name ? -1 : a.request.name > b.request.name ? 1 : 0));
  return sets.map((set) => matched.filter((entry) => set.has(entry.key)).map((entry) => entry.request));
}

/**
 * UPDATE registry SET <a request, see requestedChanges>, requested_seq + <the requests of the source's match key>
 *   WHERE source_id IN (enabled sources whose match_key is one of `requests`' keys)
 *   RETURNING the row's counters and state, and its source's name, url, shard, move_to and match_key.
 * The count is a CASE over the keys when a batch names a key more than once, else 1.
 */
function buildQuery(db: Kysely<Schema>, dialect: StoreDialect, requests: ReadonlyMap<string, number>, nowMs: number) {
  const keys = [...requests.keys()];
  // PostgreSQL takes the keys as one array parameter: a batch's hundreds of keys cost one
  // parameter to build, send and plan, not hundreds.
  const keyMatch = dialect === 'postgres' ? sql<boolean>`sources.match_key = any(${keys})` : sql<boolean>`sources.match_key in (${sql.join(keys)})`;
  const repeated = [...requests].filter(([, count]) => count > 1);
  const increment =
    repeated.length === 0
      ? sql<number>`1`
      : sql<number>`case (select s.match_key from sources s where s.id = registry.source_id) ${sql.join(
          repeated.map(([key, count]) => sql`when ${key} then ${sql.lit(count)}`),
          sql` `,
        )} else 1 end`;
  return db
    .updateTable('registry')
    .set({ ...requestedChanges(nowMs), requested_seq: sql<number>`requested_seq + ${increment}` })
    .where('source_id', 'in', (eb) =>
      eb.selectFrom('sources').select('sources.id').where(keyMatch).where('sources.enabled', '=', 1),
    )
    .returning([
      'registry.source_id',
      'registry.requested_seq',
      'registry.completed_seq',
      'registry.state',
      sql<string>`(select s.name from sources s where s.id = registry.source_id)`.as('name'),
      sql<string>`(select s.url from sources s where s.id = registry.source_id)`.as('url'),
      sql<string | null>`(select s.shard_id from sources s where s.id = registry.source_id)`.as('shard_id'),
      sql<string | null>`(select s.move_to from sources s where s.id = registry.source_id)`.as('move_to'),
      sql<string>`(select s.match_key from sources s where s.id = registry.source_id)`.as('match_key'),
    ]);
}
