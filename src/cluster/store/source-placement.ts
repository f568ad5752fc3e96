import { sql, type Kysely } from 'kysely';
import type { Schema } from '../../store/types.js';

/**
 * The statements that place sources on shards and ask for moves, on the
 * `sources` table's placement columns (migration 008): `shard_id` (where the
 * mirror lives, null until placed), `move_to` (the shard it is asked to
 * move to, or null) and `placement_epoch` (how many times it moved).
 *
 * A move is asked here and done elsewhere: these statements only write
 * `move_to`; the target shard's worker syncs the source there and flips it
 * (replication/store/registry-statements.ts: shard_id = target, move_to = null,
 * placement_epoch + 1, only where the epoch is still the one it read). Every
 * registry write of a sync carries the epoch it was placed under, so once
 * the flip bumps it, a worker that still believes it owns the source writes
 * nothing. Nothing here touches the epoch: asking (or calling off) a move
 * changes no one's right to write, only the flip does.
 */

/**
 * Up to `limit` sources that have no shard yet (added while no shard was
 * active), lowest id first.
 * Inputs: the batch size. Stores nothing. Returns id and name (the name is
 * what rendezvous hashing places by).
 */
export async function unplacedSources(db: Kysely<Schema>, limit: number) {
  return db.selectFrom('sources').select(['id', 'name']).where('shard_id', 'is', null).orderBy('id').limit(limit).execute();
}

/**
 * Places source `sourceId` on `shard`, only if it is still unplaced.
 * Inputs: the source id, the shard chosen (null leaves it unplaced). Stores
 * shard_id; placement_epoch stays 0 (a first placement is no move: nothing
 * was written for the source under another shard).
 * Returns whether it placed it. Why the `shard_id is null` guard: workers
 * starting together all place the unplaced sources; the first write wins
 * and the others change nothing (they would choose the same shard from the
 * same candidates, but may see different ones).
 */
export async function placeIfUnplaced(db: Kysely<Schema>, sourceId: number, shard: string | null): Promise<boolean> {
  const result = await db.updateTable('sources').set({ shard_id: shard }).where('id', '=', sourceId).where('shard_id', 'is', null).executeTakeFirst();
  return Number(result.numUpdatedRows) > 0;
}

/**
 * Asks for source `sourceId` to move to shard `target`.
 * Inputs: the source id and target. Stores move_to = target, unless the
 * source is already placed on the target.
 * Returns whether it asked (false: already there, or no such source).
 */
export async function askMove(db: Kysely<Schema>, sourceId: number, target: string): Promise<boolean> {
  const result = await db
    .updateTable('sources')
    .set({ move_to: target })
    .where('id', '=', sourceId)
    .where((eb) => eb.or([eb('shard_id', 'is', null), eb('shard_id', '<>', target)]))
    .executeTakeFirst();
  return Number(result.numUpdatedRows) > 0;
}

/**
 * Calls off any move asked for source `sourceId`. Inputs: the source id.
 * Stores move_to = null. Returns nothing. Why: asking to move a source to
 * the shard it is on means "leave it there", so a move asked before must
 * not go on.
 */
export async function callOffMove(db: Kysely<Schema>, sourceId: number): Promise<void> {
  await db.updateTable('sources').set({ move_to: null }).where('id', '=', sourceId).execute();
}

/** The sources placed on shard `shardId`. Inputs: the shard id. Stores nothing. Returns id and name (what a drain places them by). */
export async function sourcesPlacedOn(db: Kysely<Schema>, shardId: string) {
  return db.selectFrom('sources').select(['id', 'name']).where('shard_id', '=', shardId).execute();
}

/** A source a drain moves off its shard. */
export interface MoveOff {
  sourceId: number;
  /** The shard being drained. */
  from: string;
  /** Its rendezvous choice among the other active shards. */
  to: string | null;
}

/**
 * Asks for one source of a draining shard to move.
 * Inputs: the source, the drained shard and the target. Stores move_to =
 * target, only while the source is still placed on the drained shard.
 * Returns nothing. Why the `shard_id = from` guard: a source that moved
 * away since the drain listed it must not be sent anywhere else.
 */
export async function askMoveOff(db: Kysely<Schema>, move: MoveOff): Promise<void> {
  await db.updateTable('sources').set({ move_to: move.to }).where('id', '=', move.sourceId).where('shard_id', '=', move.from).execute();
}

/**
 * How many sources are still placed on shard `shardId` (`shard drain --wait`
 * polls it until 0). Inputs: the shard id. Stores nothing. Returns the count.
 */
export async function countSourcesOn(db: Kysely<Schema>, shardId: string): Promise<number> {
  const row = await db.selectFrom('sources').select(sql<number | string>`count(*)`.as('n')).where('shard_id', '=', shardId).executeTakeFirst();
  return Number(row?.n ?? 0);
}
