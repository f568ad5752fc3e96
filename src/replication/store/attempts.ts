import { sql, type Kysely } from 'kysely';
import { fenceText, toAttempt, truncateFailure } from './rows.js';
import { run, type Batch } from '../../store/batch.js';
import { prepared, type PreparedQuery } from '../../store/sql.js';
import type { AttemptResult, Schema, SyncAttempt, SyncTrigger } from '../../store/types.js';

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

/** The statements every sync runs on sync_attempts, compiled once per database (see PreparedQuery). */
export interface AttemptQueries {
  insert: PreparedQuery<[sourceId: number, trigger: SyncTrigger, startedAt: number, fence: bigint | null], { id: number }>;
  prune: PreparedQuery<[sourceId: number], unknown>;
  complete: PreparedQuery<[finishedAt: number, result: AttemptResult, error: string | null, refsChanged: number | null, id: number], unknown>;
}

export function attemptQueries(db: Kysely<Schema>): AttemptQueries {
  return {
    insert: prepared(db, (arg) =>
      db.insertInto('sync_attempts').values({ source_id: arg(0), trigger: arg(1), started_at: arg(2), fence: arg(3) }).returning('id'),
    ),
    prune: prepared(db, (arg) =>
      db
        .deleteFrom('sync_attempts')
        .where('source_id', '=', arg(0))
        .where('id', '<=', (eb) =>
          eb
            .selectFrom('sync_attempts')
            .select('id')
            .where('source_id', '=', arg(0))
            .orderBy('id', 'desc')
            .limit(1)
            .offset(ATTEMPTS_KEPT_PER_SOURCE),
        ),
    ),
    complete: prepared(db, (arg) =>
      db
        .updateTable('sync_attempts')
        .set({
          finished_at: arg(0),
          result: arg(1),
          error: arg(2),
          refs_changed: arg(3),
          // A wall clock stepping back must not record a negative duration.
          duration_ms: sql<number>`case when started_at < ${arg(0)} then ${arg(0)} - started_at else 0 end`,
        })
        .where('id', '=', arg(4)),
    ),
  };
}

/** Records a running attempt and prunes the source's history; returns its id (a batch: see store/batch.ts). */
export function* insertAttempt(queries: AttemptQueries, attempt: { sourceId: number; trigger: SyncTrigger; fence: bigint | null; now: Date }): Batch<number> {
  const { sourceId, trigger, fence, now } = attempt;
  const row = (yield* run(queries.insert, sourceId, trigger, now.getTime(), fence)).rows[0];
  if (!row) throw new Error('inserting a sync attempt returned no id');
  yield* run(queries.prune, sourceId);
  return Number(row.id);
}

/** Completes attempt `id`; false when it no longer exists (pruned or source removed). A batch: see store/batch.ts. */
export function* completeAttempt(queries: AttemptQueries, id: number, outcome: AttemptOutcome): Batch<boolean> {
  const error = outcome.error == null ? null : truncateFailure(outcome.error);
  const result = yield* run(queries.complete, outcome.now.getTime(), outcome.result, error, outcome.refsChanged ?? null, id);
  return Number(result.numAffectedRows ?? 0) > 0;
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
