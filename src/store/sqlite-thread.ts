import { Worker } from 'node:worker_threads';
import { ForgesyncError } from '../errors.js';

/** The thread's connection was closed (the database is closing) before or while a request was sent. */
export class SqliteThreadClosedError extends ForgesyncError {
  constructor(
    readonly file: string,
    readonly role: string,
  ) {
    super(`the SQLite ${role} of ${file} is closed: the database was closed while requests were still being made; stop its users before closing it`);
  }
}

interface Pending<A> {
  resolve(answer: A): void;
  reject(error: Error): void;
}

type Reply<A> = { id: number; error: { message: string; code?: string } } | ({ id: number } & A);

/**
 * A worker thread with a SQLite connection of its own (the script
 * `script`, next to this file), answering numbered requests in order. The
 * thread starts at the first request and is referenced only while requests
 * are outstanding, so an idle one never holds the process open; a thread
 * that dies fails what it had and the next request starts another.
 */
export class SqliteThread<Q extends object, A extends object> {
  readonly #pending = new Map<number, Pending<A>>();
  #worker: Worker | undefined;
  #nextId = 0;
  #closed = false;

  constructor(
    private readonly script: URL,
    private readonly file: string,
    /** What the thread does, for messages: `writer`, `reader`. */
    private readonly role: string,
    private readonly workerData: object,
  ) {}

  /** Sends `request`; resolves with the thread's answer, rejects with its error (the SQLite `code` kept). */
  request(request: Q): Promise<A> {
    if (this.#closed) return Promise.reject(new SqliteThreadClosedError(this.file, this.role));
    const worker = (this.#worker ??= this.#start());
    const id = ++this.#nextId;
    if (this.#pending.size === 0) worker.ref();
    return new Promise<A>((resolve, reject) => {
      this.#pending.set(id, { resolve, reject });
      worker.postMessage({ ...request, id });
    });
  }

  /** Starts the thread now rather than at the first request (which would wait for it: tens of milliseconds). */
  warm(): void {
    if (!this.#closed) this.#worker ??= this.#start();
  }

  /** Closes the thread's connection once the requests sent have been answered; idempotent. */
  async close(): Promise<void> {
    this.#closed = true;
    const worker = this.#worker;
    if (!worker) return;
    this.#worker = undefined;
    worker.ref();
    const exited = new Promise<void>((resolve) => worker.once('exit', () => resolve()));
    // Messages are handled in order: the close comes after every request already sent.
    worker.postMessage({ close: true });
    await exited;
  }

  #start(): Worker {
    const worker = new Worker(this.script, { workerData: { file: this.file, ...this.workerData } });
    worker.unref();
    worker.on('message', (reply: Reply<A>) => {
      const pending = this.#pending.get(reply.id);
      if (!pending) return;
      this.#pending.delete(reply.id);
      if (this.#pending.size === 0) worker.unref();
      if ('error' in reply) pending.reject(Object.assign(new Error(reply.error.message), reply.error.code ? { code: reply.error.code } : {}));
      else pending.resolve(reply);
    });
    const failAll = (error: Error) => {
      if (this.#worker === worker) this.#worker = undefined;
      for (const pending of this.#pending.values()) pending.reject(error);
      this.#pending.clear();
    };
    worker.on('error', (error) => failAll(error));
    worker.on('exit', (code) =>
      failAll(this.#closed ? new SqliteThreadClosedError(this.file, this.role) : new Error(`the SQLite ${this.role} thread of ${this.file} stopped (exit code ${code}); the next request starts a new one`)),
    );
    return worker;
  }
}
