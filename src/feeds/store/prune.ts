/**
 * The statements pruning the change log runs (the bisection that uses them
 * is in ../prune.ts). Inputs: change numbers. Nothing is stored but the
 * deletes of deleteChangeRange; the reads return numbers and times.
 */
import { sql, type Kysely } from 'kysely';
import type { Schema } from '../../store/types.js';

/**
 * The lowest change number in the log (`low`) and the highest no feed still
 * needs (`floor`): every feed's cursor, and one below every change a feed
 * holds back or keeps dead; with no feed, the head. Either is null when
 * the log is empty (or, for `floor`, nothing is numbered yet). Staged
 * changes must be numbered first (the caller does), or the floor misses them.
 */
export async function pruneBounds(db: Kysely<Schema>): Promise<{ low: number | string | null; floor: number | string | null }> {
  return db
    .selectFrom('change_log')
    .select([
      sql<number | string | null>`min(seq)`.as('low'),
      sql<number | string | null>`coalesce((select min(m) from (
        select min(cursor) as m from feeds
        union all select min(seq) - 1 from feed_pending
        union all select min(seq) - 1 from feed_dead_letters) as floors), (select seq from change_head where id = 1))`.as('floor'),
    ])
    .executeTakeFirstOrThrow();
}

/** The first change numbered `seq` or above (its number and when it was recorded), by one primary-key lookup; undefined past the end. */
export async function firstChangeFrom(db: Kysely<Schema>, seq: number): Promise<{ seq: number | string; recorded_at: number | string } | undefined> {
  return db.selectFrom('change_log').select(['seq', 'recorded_at']).where('seq', '>=', seq).orderBy('seq').limit(1).executeTakeFirst();
}

/** Deletes the changes numbered `from` to `to` (inclusive): a key range, so the write lock is held only as long as the range takes. Returns how many went. */
export async function deleteChangeRange(db: Kysely<Schema>, from: number, to: number): Promise<number> {
  const result = await db.deleteFrom('change_log').where('seq', '>=', from).where('seq', '<=', to).executeTakeFirst();
  return Number(result.numDeletedRows);
}
