import { sql, type Kysely } from 'kysely';
import { fenceText, toAttempt, truncateFailure } from './rows.js';
import type { AttemptResult, Schema, SyncAttempt, SyncTrigger } from './types.js';

/** How many attempts are kept per source; older ones are pruned on insert. */
export const ATTEMPTS_KEPT_PER_SOURCE = 100;

/** How an attempt ended. */
export interface AttemptOutcome {
  result: AttemptResult;
  /** Already redacted by the caller; truncated to 2000 characters. */
  error?: string | null;
  refsChanged?: number | null;
  now: Date;
}

/** Records a running attempt and prunes the source's history; returns its id. */
export async function insertAttempt(
  db: Kysely<Schema>,
  sourceId: number,
  trigger: SyncTrigger,
  fence: bigint | null,
  now: Date,
): Promise<number> {
  const row = await db
    .insertInto('sync_attempts')
    .values({ source_id: sourceId, trigger, started_at: now.getTime(), fence })
    .returning('id')
    .executeTakeFirstOrThrow();
  await db
    .deleteFrom('sync_attempts')
    .where('source_id', '=', sourceId)
    .where('id', '<=', (eb) =>
      eb
        .selectFrom('sync_attempts')
        .select('id')
        .where('source_id', '=', sourceId)
        .orderBy('id', 'desc')
        .limit(1)
        .offset(ATTEMPTS_KEPT_PER_SOURCE),
    )
    .execute();
  return Number(row.id);
}

/** Completes attempt `id`; false when it no longer exists (pruned or source removed). */
export async function completeAttempt(db: Kysely<Schema>, id: number, outcome: AttemptOutcome): Promise<boolean> {
  const nowMs = outcome.now.getTime();
  const result = await db
    .updateTable('sync_attempts')
    .set({
      finished_at: nowMs,
      result: outcome.result,
      error: outcome.error == null ? null : truncateFailure(outcome.error),
      refs_changed: outcome.refsChanged ?? null,
      // A wall clock stepping back must not record a negative duration.
      duration_ms: sql<number>`case when started_at < ${nowMs} then ${nowMs} - started_at else 0 end`,
    })
    .where('id', '=', id)
    .executeTakeFirst();
  return Number(result.numUpdatedRows) > 0;
}

/** The newest `limit` attempts of a source, newest first. */
export async function listAttempts(db: Kysely<Schema>, sourceId: number, limit: number): Promise<SyncAttempt[]> {
  const rows = await db
    .selectFrom('sync_attempts')
    .select(['id', 'source_id', 'trigger', 'started_at', 'finished_at', 'result', 'error', 'refs_changed', 'duration_ms'])
    .select(fenceText)
    .where('source_id', '=', sourceId)
    .orderBy('id', 'desc')
    .limit(limit)
    .execute();
  return rows.map(toAttempt);
}
