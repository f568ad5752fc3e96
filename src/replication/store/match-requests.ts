import { sql, type Kysely } from 'kysely';
import { prepared, requestedChanges } from '../../store/sql.js';
import type { StoreDialect } from '../../store/database.js';
import type { Schema } from '../../store/types.js';

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

/** Records webhook requests by match key; see {@link matchRequests}. */
export interface MatchRequests {
  /**
   * For several deliveries at once (a group commit of concurrent webhooks):
   * records a request (the same change as RegistryRepository.request) on
   * every enabled source whose match key is in a set, in one statement, each
   * source counting one request per set that names it (as if each delivery
   * had run alone); then each set gets the sources its own keys match.
   */
  requestByMatchKeySets(keySets: readonly (readonly string[])[], now: Date): Promise<MatchedRequest[][]>;
}

/**
 * The webhook hot path's statement, one UPDATE … RETURNING that also
 * returns each source's name, URL and placement (no lookup before the
 * write). PostgreSQL gets one statement prepared once, the batch's keys and
 * counts as two array parameters; SQLite one built per batch.
 */
export function matchRequests(db: Kysely<Schema>, dialect: StoreDialect): MatchRequests {
  const run = dialect === 'postgres' ? postgresStatement(db) : (requests: ReadonlyMap<string, number>, nowMs: number) => sqliteQuery(db, requests, nowMs).execute();
  return {
    async requestByMatchKeySets(keySets, now) {
      const sets = keySets.map((keys) => new Set(keys.filter(Boolean)));
      const requests = new Map<string, number>();
      for (const set of sets) for (const key of set) requests.set(key, (requests.get(key) ?? 0) + 1);
      if (requests.size === 0) return sets.map(() => []);
      const rows = (await run(requests, now.getTime())) as Row[];
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
    },
  };
}

/**
 * PostgreSQL, compiled once and prepared by name; arguments: the distinct
 * keys (text[]), how many deliveries named each (integer[], same order), now (ms).
 *   UPDATE registry SET <a request, see requestedChanges>, requested_seq + counts[array_position(keys, sources.match_key)]
 *     FROM sources
 *     WHERE sources.id = registry.source_id AND sources.match_key = ANY(keys) AND sources.enabled = 1
 *     RETURNING the row's counters and state, and its source's name, url, shard_id, move_to and match_key.
 * A plain indexed ANY keeps a plan that is good for any batch, so the
 * statement can be planned once (a join on the unnested arrays could not:
 * its generic plan ran at half the speed).
 */
function postgresStatement(db: Kysely<Schema>) {
  const statement = prepared<[keys: string[], counts: number[], nowMs: number], Row>(db, (arg) => {
    const keys = sql`cast(${arg(0)} as text[])`;
    return db
      .updateTable('registry')
      .from('sources')
      .set({ ...requestedChanges(arg(2)), requested_seq: sql<number>`registry.requested_seq + (cast(${arg(1)} as integer[]))[array_position(${keys}, sources.match_key)]` })
      .whereRef('sources.id', '=', 'registry.source_id')
      .where(sql<boolean>`sources.match_key = any(${keys})`)
      .where('sources.enabled', '=', 1)
      .returning(['registry.source_id', 'registry.requested_seq', 'registry.completed_seq', 'registry.state', 'sources.name', 'sources.url', 'sources.shard_id', 'sources.move_to', 'sources.match_key']);
  });
  return async (requests: ReadonlyMap<string, number>, nowMs: number) => (await statement.execute([...requests.keys()], [...requests.values()], nowMs)).rows;
}

/**
 * SQLite, built per batch (its RETURNING cannot name another table, so the
 * source's columns are subselects):
 *   UPDATE registry SET <a request, see requestedChanges>, requested_seq + <the requests of the source's match key>
 *     WHERE source_id IN (enabled sources whose match_key is one of `requests`' keys)
 *     RETURNING the row's counters and state, and its source's name, url, shard, move_to and match_key.
 * The count is a CASE over the keys when a batch names a key more than once, else 1.
 */
function sqliteQuery(db: Kysely<Schema>, requests: ReadonlyMap<string, number>, nowMs: number) {
  const keys = [...requests.keys()];
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
      eb.selectFrom('sources').select('sources.id').where(sql<boolean>`sources.match_key in (${sql.join(keys)})`).where('sources.enabled', '=', 1),
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
