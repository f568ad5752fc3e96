import type { Kysely } from 'kysely';
import { numberStagedChanges } from '../store/change-log.js';
import type { Schema } from '../store/types.js';
import { deleteChangeRange, firstChangeFrom, pruneBounds } from './store/prune.js';

/** Rows deleted per statement: the write lock is never held for long. */
const DELETE_CHUNK = 10_000;

/**
 * Deletes changes recorded before `beforeMs` that no feed still needs: at or
 * below every feed's cursor and below every change a feed holds back or
 * keeps dead. Returns how many went.
 *
 * Numbers follow commit order and `recorded_at` comes from the clock at
 * commit, so time grows with the number: the last change recorded before
 * the cutoff is found by bisecting the number range, one primary-key lookup
 * a step, and the deletes are key ranges (no scan of the log, which has no
 * index on time). Clocks of several processes a little apart make the
 * cutoff as approximate as they are.
 */
export async function pruneChangeLog(db: Kysely<Schema>, beforeMs: number): Promise<number> {
  await numberStagedChanges(db); // what is still staged has no number for the floor to compare with
  const bounds = await pruneBounds(db);
  if (bounds.low === null || bounds.floor === null) return 0;
  let low = Number(bounds.low);
  let high = Number(bounds.floor);
  /** Whether the first change numbered `seq` or above is deletable: at most `high` (the floor), recorded before the cutoff. */
  const old = async (seq: number) => {
    const row = await firstChangeFrom(db, seq);
    return row !== undefined && Number(row.seq) <= Number(bounds.floor) && Number(row.recorded_at) < beforeMs;
  };
  if (low > high || !(await old(low))) return 0;
  // The largest number up to which every change is deletable (time grows with the number).
  while (low < high) {
    const middle = Math.ceil((low + high) / 2);
    if (await old(middle)) low = middle;
    else high = middle - 1;
  }
  let deleted = 0;
  for (let from = Number(bounds.low); from <= low; from += DELETE_CHUNK) {
    deleted += await deleteChangeRange(db, from, Math.min(low, from + DELETE_CHUNK - 1));
  }
  return deleted;
}
