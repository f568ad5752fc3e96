import type BetterSqlite3 from 'better-sqlite3';
import { sql, type Kysely } from 'kysely';
import { sqliteHandleOf } from './atomic.js';
import { requestedChanges } from './sql.js';
import type { Schema } from './types.js';

/** A source a request was recorded for by requestByMatchKeys(). */
export interface MatchedRequest {
  sourceId: number;
  name: string;
  url: string;
  /** The new requested_seq. */
  requestedSeq: number;
}

type Row = { source_id: unknown; requested_seq: unknown; name: string; url: string };

/** A prepared statement and the SQL it was compiled from, per number of keys. */
interface Prepared {
  statement: BetterSqlite3.Statement;
  /** True when the parameters are exactly [now, ...keys, 1] (checked when prepared). */
  positional: boolean;
}

/** Key counts kept prepared per SQLite handle (deliveries carry 1–6 distinct keys). */
const MAX_PREPARED = 16;
const prepared = new WeakMap<BetterSqlite3.Database, Map<number, Prepared>>();

/**
 * Records a request (the same change as RegistryRepository.request) on every
 * enabled source whose match key is among `keys`, in one UPDATE … RETURNING
 * statement that also returns each source's name and URL. This is the
 * webhook hot path: one statement instead of a lookup plus a write, and on
 * SQLite it is built, compiled and prepared once per number of keys (Kysely's
 * driver prepares every statement anew, which costs more than running it).
 */
export async function requestByMatchKeys(db: Kysely<Schema>, keys: readonly string[], now: Date): Promise<MatchedRequest[]> {
  const unique = [...new Set(keys)].filter(Boolean);
  if (unique.length === 0) return [];
  const handle = sqliteHandleOf(db);
  const rows = handle ? runPrepared(handle, db, unique, now.getTime()) : await buildQuery(db, unique, now.getTime()).execute();
  return (rows as Row[])
    .map((row) => ({ sourceId: Number(row.source_id), name: row.name, url: row.url, requestedSeq: Number(row.requested_seq) }))
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
    ]);
}

function runPrepared(handle: BetterSqlite3.Database, db: Kysely<Schema>, keys: string[], nowMs: number): unknown[] {
  let cache = prepared.get(handle);
  if (!cache) prepared.set(handle, (cache = new Map()));
  const cached = cache.get(keys.length);
  const positional = [nowMs, ...keys, 1];
  if (cached?.positional) return cached.statement.all(positional);
  const compiled = buildQuery(db, keys, nowMs).compile();
  const statement = cached?.statement ?? handle.prepare(compiled.sql);
  if (!cached) {
    if (cache.size >= MAX_PREPARED) cache.clear();
    const sameShape = compiled.parameters.length === positional.length && compiled.parameters.every((p, i) => p === positional[i]);
    cache.set(keys.length, { statement, positional: sameShape });
  }
  return statement.all(compiled.parameters as unknown[]);
}
