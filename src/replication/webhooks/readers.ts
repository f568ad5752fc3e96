import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { ForgesyncError } from '../../errors.js';
import { openWorkerPool } from '../../threads/pool.js';
import type { WorkerPool } from '../../threads/types.js';
import type { DeliveryIntent } from './delivery.js';
import { readDelivery, type DeliveryJob, type ReadSecrets } from './read.js';

/** Reads deliveries (readDelivery), here or on reader threads. */
export interface DeliveryReaders {
  read(job: DeliveryJob): Promise<DeliveryIntent>;
  /** Stops the threads; reads still outstanding reject. Idempotent. */
  close(): Promise<void>;
}

/** A reader thread stopped (crashed, or the readers were closed) with this delivery in it. */
export class ReaderThreadStoppedError extends ForgesyncError {
  constructor(
    readonly reason: string,
    /** The pool's WorkerThreadStoppedError (which thread, its cause), when a thread died. */
    options?: ErrorOptions,
  ) {
    super(`the webhook reader thread stopped before reading the delivery (${reason}); the forge redelivers it, and the next delivery starts a new thread`, options);
  }
}

/** The compiled thread script; absent when running from the TypeScript sources (tests). */
export const READER_SCRIPT = new URL('./reader.worker.js', import.meta.url);

/**
 * `threads` reader threads, or reading on the event loop when `threads` is
 * 0 or the compiled thread script is not there (running from sources).
 */
export function openReaders(secrets: ReadSecrets, threads: number, script: URL = READER_SCRIPT): DeliveryReaders {
  if (threads > 0 && existsSync(fileURLToPath(script))) return new ThreadedReaders(secrets, threads, script);
  return { read: async (job) => readDelivery(job, secrets), close: async () => {} };
}

/**
 * Reads deliveries on threads (a worker pool, threads/types.ts), so HMAC
 * and JSON (up to the body limit a delivery) never hold up the event loop
 * that serves every other request. The jobs of one turn of the event loop
 * go as one message (one wake-up of a thread, not one a delivery), threads
 * taking turns by batch; each body is copied into a buffer of its own and
 * transferred. A thread is referenced only while it has jobs, one that dies
 * fails its jobs and is replaced at the next batch, and closing terminates
 * the threads (the forge redelivers what was in them).
 */
export class ThreadedReaders implements DeliveryReaders {
  readonly #pool: WorkerPool<DeliveryJob, DeliveryIntent>;

  constructor(secrets: ReadSecrets, threads: number, script: URL) {
    this.#pool = openWorkerPool({
      name: 'webhook reader',
      script,
      workerData: { secrets },
      threads,
      coalesce: true,
      onClose: 'terminate',
      errors: {
        closed: () => new ReaderThreadStoppedError('the server is closing'),
        stopped: (stopped) => new ReaderThreadStoppedError(stopped.reason, { cause: stopped }),
      },
    });
  }

  read(job: DeliveryJob): Promise<DeliveryIntent> {
    const body = new Uint8Array(job.body);
    return this.#pool.request({ ...job, body }, [body.buffer]);
  }

  close(): Promise<void> {
    return this.#pool.close();
  }
}
