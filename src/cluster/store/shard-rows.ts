import { sql, type Kysely } from 'kysely';
import type { Schema } from '../../store/types.js';

/**
 * The statements on the `shards` table (migration 008): one row per storage
 * root a worker owns, written by its worker (register, heartbeat) and by
 * `shard drain`, read by every process to place sources and to reach a
 * shard's worker. The row stores `active` or `draining` only: `down` is never
 * written, it is read from `last_seen_at` (see ShardRepository), so a worker
 * that dies needs nobody to mark it.
 */

/** What registerShard writes. */
export interface ShardRowValues {
  id: string;
  node: string;
  dataDir: string;
  weight: number;
  endpoint: string | null;
}

/**
 * Registers shard `id` for the worker that owns it.
 * Inputs: the worker's shard id, its `<host>:<pid>`, data dir, weight and
 * internal endpoint (null when it runs none); `now` in ms.
 * Stores: a new row, `active`, registered and seen at `now`, 0 bytes; or, when
 * the row exists, its node, data dir, weight, endpoint and last_seen_at only.
 * Returns nothing.
 * Why an upsert that leaves `state` and `bytes` alone: a worker restarting on
 * a shard being drained must not make it active again (it would take new
 * sources while its sources leave), and the size is the heartbeat's to report.
 */
export async function registerShard(db: Kysely<Schema>, shard: ShardRowValues, now: number): Promise<void> {
  const { id, node, dataDir, weight, endpoint } = shard;
  await db
    .insertInto('shards')
    .values({ id, state: 'active', node, data_dir: dataDir, weight, bytes: 0, registered_at: now, last_seen_at: now, endpoint })
    .onConflict((oc) => oc.column('id').doUpdateSet({ node, data_dir: dataDir, weight, last_seen_at: now, endpoint }))
    .execute();
}

/** What beatShard writes. */
export interface ShardBeatValues {
  id: string;
  bytes: number;
  node: string;
  endpoint: string | null;
}

/**
 * A worker's heartbeat on shard `id`.
 * Inputs: the shard id, the size of its mirrors, the beating worker's
 * `<host>:<pid>` and endpoint; `now` in ms.
 * Stores: last_seen_at = now, bytes, node, endpoint, on the existing row only
 * (a shard that never registered stays unknown). Returns nothing.
 * Why the worker is written with every beat: several workers may serve one
 * shard, and the row names the last one that wrote it; when that one stops,
 * a survivor's next beat (every ttl/3) names itself, so forwarded reads do
 * not keep going to a dead endpoint.
 */
export async function beatShard(db: Kysely<Schema>, beat: ShardBeatValues, now: number): Promise<void> {
  await db.updateTable('shards').set({ last_seen_at: now, bytes: beat.bytes, node: beat.node, endpoint: beat.endpoint }).where('id', '=', beat.id).execute();
}

/**
 * Every shard with the number of sources placed on it, by id (`shard list`).
 * Inputs: none. Stores nothing.
 * Returns: id, stored state, node, bytes, last_seen_at and `sources` (a count:
 * a string on PostgreSQL, whose count is a bigint).
 * Why a left join grouped by shard: a shard with no source yet is listed
 * too, with 0, and one statement counts them all.
 */
export async function shardRowsWithSourceCounts(db: Kysely<Schema>) {
  return db
    .selectFrom('shards as h')
    .leftJoin('sources as s', 's.shard_id', 'h.id')
    .select(['h.id', 'h.state', 'h.node', 'h.bytes', 'h.last_seen_at', sql<number | string>`count(s.id)`.as('sources')])
    .groupBy(['h.id', 'h.state', 'h.node', 'h.bytes', 'h.last_seen_at'])
    .orderBy('h.id')
    .execute();
}

/**
 * Where to reach the shards' workers.
 * Inputs: a shard id, or undefined for every shard. Stores nothing.
 * Returns: id, stored state, endpoint and last_seen_at, by id (no row for an
 * unknown id); the caller reads `down` from last_seen_at.
 */
export async function shardEndpointRows(db: Kysely<Schema>, id: string | undefined) {
  let query = db.selectFrom('shards').select(['id', 'state', 'endpoint', 'last_seen_at']).orderBy('id');
  if (id !== undefined) query = query.where('id', '=', id);
  return query.execute();
}

/**
 * The ids of the shards seen since `seenSince` (ms), by id, whatever their
 * stored state: a draining shard's worker still syncs and answers.
 * Inputs: seenSince = now − the down threshold. Stores nothing.
 */
export async function shardIdsSeenSince(db: Kysely<Schema>, seenSince: number): Promise<string[]> {
  const rows = await db.selectFrom('shards').select('id').where('last_seen_at', '>=', seenSince).orderBy('id').execute();
  return rows.map((row) => row.id);
}

/**
 * The shards new sources may be placed on: active (not draining), with a
 * weight above 0, seen since `seenSince` (ms).
 * Inputs: seenSince = now − the down threshold. Stores nothing.
 * Returns: id and weight, in no set order (rendezvous hashing does not
 * depend on order).
 */
export async function activeShardRows(db: Kysely<Schema>, seenSince: number) {
  return db.selectFrom('shards').select(['id', 'weight']).where('state', '=', 'active').where('weight', '>', 0).where('last_seen_at', '>=', seenSince).execute();
}

/**
 * Shard `id`'s stored state and when it was last seen, to tell whether it
 * may take a source. Inputs: the id. Stores nothing. Returns undefined when
 * the shard is unknown.
 */
export async function shardStateRow(db: Kysely<Schema>, id: string) {
  return db.selectFrom('shards').select(['state', 'last_seen_at']).where('id', '=', id).executeTakeFirst();
}

/** Whether shard `id` has a row (registered once, whatever its state). Inputs: the id. Stores nothing. */
export async function shardExists(db: Kysely<Schema>, id: string): Promise<boolean> {
  return (await db.selectFrom('shards').select('id').where('id', '=', id).executeTakeFirst()) !== undefined;
}

/**
 * Marks shard `id` draining (`shard drain`). Inputs: the id. Stores state =
 * 'draining'. Returns nothing. Why nothing here sets it back: registerShard
 * keeps the state, so a worker restarting mid-drain does not undo it, and the
 * shard takes no new sources from then on (activeShardRows leaves it out).
 */
export async function markShardDraining(db: Kysely<Schema>, id: string): Promise<void> {
  await db.updateTable('shards').set({ state: 'draining' }).where('id', '=', id).execute();
}
