import type { CompiledQuery } from 'kysely';
import { BUSY_TIMEOUT_MS, SQLITE_PRAGMAS } from '../util/sqlite-url.js';
import type { WorkerPool } from '../threads/types.js';
import { openSqliteThread } from './sqlite-thread.js';

/** A guarded list, compiled: the guards (each must return a row, or nothing is kept) and then the statements. */
export interface WriteList {
  guards: readonly CompiledQuery[];
  steps: readonly CompiledQuery[];
}

/** `committed`, or `refused` when a guard returned no row (the batch was rolled back). */
export type BatchOutcome = 'committed' | 'refused';

type Query = { sql: string; parameters: readonly unknown[] };

/**
 * The thread behind runBatch's guarded lists (batch.ts), not called on its
 * own: runs guarded write batches on a SQLite file from a worker thread with a
 * connection of its own (sqlite-writer.worker.cjs). Why: an import writes
 * tens of megabytes of JSON, and on the event loop SQLite's share of that
 * (B-trees, the WAL, checkpoints) took a third of the process's one busy
 * thread, time the parsing of the next pages then waited for. In its own
 * thread it runs on another core; the batch is the same transaction (BEGIN
 * IMMEDIATE, guards, statements, COMMIT), so what readers see and what
 * fences refuse is unchanged, and a caller's later reads on the main
 * connection see it (WAL: the commit is done when the answer arrives).
 */
export class SqliteWriter {
  readonly #thread: WorkerPool<{ guards: Query[]; steps: Query[] }, { outcome: BatchOutcome }>;

  constructor(file: string) {
    this.#thread = openSqliteThread(new URL('./sqlite-writer.worker.cjs', import.meta.url), file, 'writer', { pragmas: SQLITE_PRAGMAS, busyTimeoutMs: BUSY_TIMEOUT_MS });
  }

  /** Runs `batch` in one transaction; rejects with the SQLite error (its `code` kept) when a statement fails. */
  async write(batch: WriteList): Promise<BatchOutcome> {
    const plain = (queries: readonly CompiledQuery[]) => queries.map(({ sql, parameters }) => ({ sql, parameters }));
    return (await this.#thread.request({ guards: plain(batch.guards), steps: plain(batch.steps) })).outcome;
  }

  /** Closes the thread's connection once the batches sent have been answered; idempotent. */
  close(): Promise<void> {
    return this.#thread.close();
  }
}
