import { sql, type Compilable, type Kysely } from 'kysely';
import type { Schema } from '../../store/types.js';
import { fenceGuard } from '../../store/sql.js';

/** How a fan-out stage's jobs stand. */
export interface StageProgress {
  pending: number;
  done: number;
  failed: number;
}

/**
 * The durable stage waiter (`import_jobs`): a fan-out stage writes one row
 * per object job before it enqueues them; each job marks its row done (or
 * failed) in the transaction that stores what it fetched; the coordinator
 * advances the stage when no row is pending. A job lost with the queue is
 * found pending here and enqueued again.
 */
export class StageWaiter {
  constructor(private readonly db: Kysely<Schema>) {}

  /**
   * Records the jobs `keys` of `stage` in run `run`, pending (rows of
   * earlier runs are reset; rows of this run stay as they are, so a resumed
   * coordinator does not redo finished jobs). Returns nothing.
   */
  async add(importId: number, stage: string, run: number, keys: readonly string[], now = Date.now()): Promise<void> {
    for (let i = 0; i < keys.length; i += 500) {
      await this.db
        .insertInto('import_jobs')
        .values(keys.slice(i, i + 500).map((key) => ({ import_id: importId, key, stage, run, state: 'pending' as const, attempts: 0, updated_at: now })))
        .onConflict((oc) =>
          oc
            .columns(['import_id', 'key'])
            .doUpdateSet({ stage, run, state: 'pending', attempts: 0, error: null, updated_at: now })
            .where('import_jobs.run', '<>', run),
        )
        .execute();
    }
  }

  async progress(importId: number, stage: string, run: number): Promise<StageProgress> {
    const rows = await this.db
      .selectFrom('import_jobs')
      .select(['state', sql<number>`count(*)`.as('n')])
      .where('import_id', '=', importId)
      .where('stage', '=', stage)
      .where('run', '=', run)
      .groupBy('state')
      .execute();
    const progress: StageProgress = { pending: 0, done: 0, failed: 0 };
    for (const row of rows) progress[row.state] = Number(row.n);
    return progress;
  }

  /** Pending job keys of the stage, in key order, at most `limit`. */
  async pending(importId: number, stage: string, run: number, limit = 100_000): Promise<string[]> {
    const rows = await this.db
      .selectFrom('import_jobs')
      .select('key')
      .where('import_id', '=', importId)
      .where('stage', '=', stage)
      .where('run', '=', run)
      .where('state', '=', 'pending')
      .orderBy('key')
      .limit(limit)
      .execute();
    return rows.map((row) => row.key);
  }

  /** The state of one job row (a job reads it first: done ones are not run twice). */
  async find(importId: number, key: string): Promise<{ state: string; run: number; stage: string; attempts: number } | undefined> {
    const row = await this.db.selectFrom('import_jobs').select(['state', 'run', 'stage', 'attempts']).where('import_id', '=', importId).where('key', '=', key).executeTakeFirst();
    return row ? { state: row.state, run: Number(row.run), stage: row.stage, attempts: Number(row.attempts) } : undefined;
  }

  async storedFence(importId: number, key: string): Promise<bigint | null> {
    const row = await this.db.selectFrom('import_jobs').select(sql<string | null>`cast(fence as text)`.as('fence')).where('import_id', '=', importId).where('key', '=', key).executeTakeFirst();
    return row?.fence ? BigInt(row.fence) : null;
  }

  /**
   * The guard and outcome of one job, a step of the batch that stores what
   * it fetched: applies only to the pending row of run `run` whose fence is
   * not above the job lease's `fence`. Returns the key when it applied.
   */
  finishStep(importId: number, key: string, run: number, fence: bigint, outcome: { state: 'done' | 'failed'; error?: string | null }, now: number): Compilable {
    return this.db
      .updateTable('import_jobs')
      .set({ state: outcome.state, error: outcome.error?.slice(0, 1000) ?? null, fence, attempts: sql<number>`attempts + 1`, updated_at: now })
      .where('import_id', '=', importId)
      .where('key', '=', key)
      .where('run', '=', run)
      .where('state', '=', 'pending')
      .where(fenceGuard(fence))
      .returning('key');
  }
}
