import { sql, type Kysely } from 'kysely';
import type { Schema } from '../store/types.js';

/**
 * Deletes changes recorded before `beforeMs` that no feed still needs: at or
 * below every feed's cursor and below every change a feed holds back or
 * keeps dead. Returns how many went. Statement: one DELETE of a key range.
 */
export async function pruneChangeLog(db: Kysely<Schema>, beforeMs: number): Promise<number> {
  const result = await db
    .deleteFrom('change_log')
    .where('recorded_at', '<', beforeMs)
    .where(
      'seq',
      '<=',
      sql<number>`coalesce((select min(m) from (
        select min(cursor) as m from feeds
        union all select min(seq) - 1 from feed_pending
        union all select min(seq) - 1 from feed_dead_letters) as floors), (select seq from change_head where id = 1))`,
    )
    .executeTakeFirst();
  return Number(result.numDeletedRows);
}
