import { setTimeout as sleep } from 'node:timers/promises';
import type { Logger } from '../../logging/logger.js';
import { backoffDelay, type BackoffPolicy } from '../../util/backoff.js';
import { isTransientImportError } from '../errors.js';

/**
 * How an import retries what failed for a transient cause: the import's
 * retry settings, as for a GitHub request (FORGESYNC_IMPORT_RETRIES tries
 * more, the first after FORGESYNC_IMPORT_RETRY_BASE, doubling).
 */
export interface ImportRetry {
  retries: number;
  baseMs: number;
}

/** The longest pause between two tries of a step (as between two tries of a GitHub request). */
const MAX_STEP_PAUSE_MS = 60_000;

/**
 * Failures a step already tried again until its retries ran out: a step
 * around it (a job around its write) does not try them again, or the
 * retries would multiply.
 */
const givenUp = new WeakSet<object>();

/**
 * Runs `step`, and again after a pause (doubling, with jitter) each time it
 * fails for a transient cause (isTransientImportError: a pool out of
 * connections, a connection the server ended, a serialisation failure, a
 * lock or busy timeout), up to `retry.retries` times, logging each retry.
 * A step is one transaction (a page's batch, a job's answer) or a read: one
 * that failed was rolled back, so trying it again writes it once. (A
 * connection lost during COMMIT leaves that unknown; the writes are upserts
 * keyed by GitHub's ids and cursors set, not added to, so a second apply
 * changes nothing but the request counters.)
 * A failure an inner retryTransient already gave up on is not tried again.
 * @throws a permanent failure at once; the last transient one when the
 *   retries ran out; the signal's reason when it aborts during a pause.
 */
export async function retryTransient<T>(
  step: () => Promise<T>,
  options: { retry: ImportRetry; signal: AbortSignal; logger: Logger; fields: Record<string, unknown> },
): Promise<T> {
  const { retry, signal, logger, fields } = options;
  const policy: BackoffPolicy = { baseMs: retry.baseMs, maxMs: MAX_STEP_PAUSE_MS };
  for (let attempt = 1; ; attempt++) {
    try {
      return await step();
    } catch (error) {
      if (typeof error === 'object' && error !== null && givenUp.has(error)) throw error;
      if (!isTransientImportError(error)) throw error;
      if (attempt > retry.retries || signal.aborted) {
        if (typeof error === 'object' && error !== null) givenUp.add(error);
        throw error;
      }
      const pauseMs = backoffDelay(attempt, policy);
      logger.warn(
        { event: 'import_step_retry', ...fields, attempt, retries: retry.retries, pause_ms: pauseMs, err: error instanceof Error ? error.message : String(error) },
        `import step failed for a transient cause, trying again in ${pauseMs} ms (${attempt} of ${retry.retries}): ${error instanceof Error ? error.message : String(error)}`,
      );
      await sleep(pauseMs, undefined, { signal });
    }
  }
}

/**
 * When the scheduler resumes a run that failed for a transient cause, the
 * `failures`-th in a row: the first a pause longer than a step's retries
 * took together (base · 2^retries), doubling with each failure after,
 * never later than `maxMs` (the import's sync interval).
 */
export function runRetryDelay(failures: number, retry: ImportRetry, maxMs: number): number {
  return backoffDelay(failures, { baseMs: Math.min(retry.baseMs * 2 ** Math.min(retry.retries, 30), maxMs), maxMs });
}
