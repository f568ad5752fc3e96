import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import { ForgesyncError } from '../../errors.js';
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
  constructor(readonly reason: string) {
    super(`the webhook reader thread stopped before reading the delivery (${reason}); the forge redelivers it, and the next delivery starts a new thread`);
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

type Pending = { resolve(intent: DeliveryIntent): void; reject(error: Error): void };
type Reply = { id: number; intent: DeliveryIntent } | { id: number; error: string };
interface Thread {
  worker: Worker;
  pending: Map<number, Pending>;
}

/**
 * Reads deliveries on threads, so HMAC and JSON (up to the body limit a
 * delivery) never hold up the event loop that serves every other request.
 * The jobs of one turn of the event loop go as one message (one wake-up of
 * a thread, not one a delivery), threads taking turns by batch; each body
 * is copied into a buffer of its own and transferred. A thread is
 * referenced only while it has jobs, and one that dies fails its jobs and
 * is replaced at the next batch.
 */
export class ThreadedReaders implements DeliveryReaders {
  readonly #threads: (Thread | undefined)[];
  #queue: { id: number; job: DeliveryJob }[] = [];
  #waiting = new Map<number, Pending>();
  #next = 0;
  #turn = 0;
  #scheduled = false;
  #closed = false;

  constructor(
    private readonly secrets: ReadSecrets,
    threads: number,
    private readonly script: URL,
  ) {
    this.#threads = Array.from({ length: threads }, () => undefined);
  }

  read(job: DeliveryJob): Promise<DeliveryIntent> {
    if (this.#closed) return Promise.reject(new ReaderThreadStoppedError('the server is closing'));
    return new Promise<DeliveryIntent>((resolve, reject) => {
      const id = ++this.#next;
      this.#waiting.set(id, { resolve, reject });
      this.#queue.push({ id, job: { ...job, body: new Uint8Array(job.body) } });
      if (!this.#scheduled) {
        this.#scheduled = true;
        setImmediate(() => this.#send());
      }
    });
  }

  #send(): void {
    this.#scheduled = false;
    const batch = this.#queue;
    this.#queue = [];
    if (batch.length === 0 || this.#closed) return;
    const index = this.#turn++ % this.#threads.length;
    const thread = (this.#threads[index] ??= this.#start(index));
    for (const { id } of batch) {
      thread.pending.set(id, this.#waiting.get(id)!);
      this.#waiting.delete(id);
    }
    thread.worker.ref();
    thread.worker.postMessage(batch, batch.map(({ job }) => job.body.buffer as ArrayBuffer));
  }

  #start(index: number): Thread {
    const worker = new Worker(this.script, { workerData: { secrets: this.secrets } });
    const thread: Thread = { worker, pending: new Map() };
    worker.unref();
    worker.on('message', (replies: Reply[]) => {
      for (const reply of replies) {
        const pending = thread.pending.get(reply.id);
        thread.pending.delete(reply.id);
        if ('error' in reply) pending?.reject(new Error(reply.error));
        else pending?.resolve(reply.intent);
      }
      if (thread.pending.size === 0) worker.unref();
    });
    const stopped = (reason: string) => {
      if (this.#threads[index] === thread) this.#threads[index] = undefined;
      for (const pending of thread.pending.values()) pending.reject(new ReaderThreadStoppedError(reason));
      thread.pending.clear();
    };
    worker.on('error', (error) => stopped(error.message));
    worker.on('exit', (code) => stopped(this.#closed ? 'the server is closing' : `exit code ${code}`));
    return thread;
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    for (const pending of this.#waiting.values()) pending.reject(new ReaderThreadStoppedError('the server is closing'));
    this.#waiting.clear();
    await Promise.all(this.#threads.map((thread) => thread?.worker.terminate()));
  }
}
