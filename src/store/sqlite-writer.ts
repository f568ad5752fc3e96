import { Worker } from 'node:worker_threads';
import type { CompiledQuery } from 'kysely';
import { ForgesyncError } from '../errors.js';
import { BUSY_TIMEOUT_MS, SQLITE_PRAGMAS } from '../util/sqlite-url.js';

/** A write batch: the guards (each must return a row, or nothing is kept) and then the statements. */
export interface GuardedBatch {
  guards: readonly CompiledQuery[];
  steps: readonly CompiledQuery[];
}

/** `committed`, or `refused` when a guard returned no row (the batch was rolled back). */
export type BatchOutcome = 'committed' | 'refused';

/** The writer was closed (the database is closing) before or while a batch was sent. */
export class SqliteWriterClosedError extends ForgesyncError {
  constructor(readonly file: string) {
    super(`the SQLite writer of ${file} is closed: the database was closed while writes were still being made; stop the writers before closing it`);
  }
}

interface Pending {
  resolve(outcome: BatchOutcome): void;
  reject(error: Error): void;
}

type Answer = { id: number; outcome: BatchOutcome } | { id: number; error: { message: string; code?: string } };

/**
 * Runs guarded write batches on a SQLite file from a worker thread with a
 * connection of its own. Why: an import writes tens of megabytes of JSON,
 * and on the event loop SQLite's share of that (B-trees, the WAL,
 * checkpoints) took a third of the process's one busy thread, time the
 * parsing of the next pages then waited for. In its own thread it runs on
 * another core; the batch is the same transaction (BEGIN IMMEDIATE, guards,
 * statements, COMMIT), so what readers see and what fences refuse is
 * unchanged, and a caller's later reads on the main connection see it
 * (WAL: the commit is done when the answer arrives).
 *
 * The thread starts at the first batch and is kept referenced only while
 * batches are outstanding, so an idle writer never holds the process open.
 */
export class SqliteWriter {
  readonly #file: string;
  #worker: Worker | undefined;
  readonly #pending = new Map<number, Pending>();
  #nextId = 0;
  #closed = false;

  constructor(file: string) {
    this.#file = file;
  }

  /** Runs `batch` in one transaction; rejects with the SQLite error (its `code` kept) when a statement fails. */
  write(batch: GuardedBatch): Promise<BatchOutcome> {
    if (this.#closed) return Promise.reject(new SqliteWriterClosedError(this.#file));
    const worker = (this.#worker ??= this.#start());
    const id = ++this.#nextId;
    if (this.#pending.size === 0) worker.ref();
    return new Promise<BatchOutcome>((resolve, reject) => {
      this.#pending.set(id, { resolve, reject });
      worker.postMessage({
        id,
        guards: batch.guards.map(({ sql, parameters }) => ({ sql, parameters })),
        steps: batch.steps.map(({ sql, parameters }) => ({ sql, parameters })),
      });
    });
  }

  /** Closes the thread's connection once the batches sent have been answered; idempotent. */
  async close(): Promise<void> {
    this.#closed = true;
    const worker = this.#worker;
    if (!worker) return;
    this.#worker = undefined;
    worker.ref();
    const exited = new Promise<void>((resolve) => worker.once('exit', () => resolve()));
    // Messages are handled in order: the close comes after every batch already sent.
    worker.postMessage({ close: true });
    await exited;
  }

  #start(): Worker {
    const worker = new Worker(new URL('./sqlite-writer.worker.cjs', import.meta.url), {
      workerData: { file: this.#file, pragmas: SQLITE_PRAGMAS, busyTimeoutMs: BUSY_TIMEOUT_MS },
    });
    worker.unref();
    worker.on('message', (answer: Answer) => {
      const pending = this.#pending.get(answer.id);
      if (!pending) return;
      this.#pending.delete(answer.id);
      if (this.#pending.size === 0) worker.unref();
      if ('outcome' in answer) pending.resolve(answer.outcome);
      else pending.reject(Object.assign(new Error(answer.error.message), answer.error.code ? { code: answer.error.code } : {}));
    });
    const failAll = (error: Error) => {
      if (this.#worker === worker) this.#worker = undefined;
      for (const pending of this.#pending.values()) pending.reject(error);
      this.#pending.clear();
    };
    worker.on('error', (error) => failAll(error));
    worker.on('exit', (code) => failAll(this.#closed ? new SqliteWriterClosedError(this.#file) : new Error(`the SQLite writer thread of ${this.#file} stopped (exit code ${code}); the next write starts a new one`)));
    return worker;
  }
}
