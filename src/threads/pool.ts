import { Worker, type TransferListItem } from 'node:worker_threads';
import { WorkerPoolClosedError, WorkerThreadStoppedError } from './errors.js';
import type { Reply, RequestBatch, ThreadStop, WorkerPool, WorkerPoolOptions } from './types.js';

interface Pending {
  resolve(answer: unknown): void;
  reject(error: Error): void;
}

/** A running thread and the requests it has not answered yet, by id. */
interface Slot {
  worker: Worker;
  pending: Map<number, Pending>;
}

/**
 * Opens a pool of `options.threads` threads running `options.script` (none
 * started yet); the contract is in types.ts, the thread side in serve.cjs.
 */
export function openWorkerPool<Q, A>(options: WorkerPoolOptions): WorkerPool<Q, A> {
  return new ThreadPool<Q, A>(options);
}

class ThreadPool<Q, A> implements WorkerPool<Q, A> {
  readonly #options: WorkerPoolOptions;
  readonly #slots: (Slot | undefined)[];
  /** Coalescing: the requests of this turn, sent together at the next setImmediate. */
  #queue: RequestBatch = [];
  #queuedPending: Pending[] = [];
  #queuedTransfer: TransferListItem[] = [];
  #scheduled = false;
  #nextId = 0;
  #turn = 0;
  #closed = false;
  #closing: Promise<void> | undefined;

  constructor(options: WorkerPoolOptions) {
    const threads = options.threads ?? 1;
    if (!Number.isInteger(threads) || threads < 1) throw new RangeError(`a worker pool needs at least one thread; ${options.name} was given ${threads}`);
    this.#options = options;
    this.#slots = Array.from({ length: threads }, () => undefined);
  }

  request(request: Q, transfer?: readonly TransferListItem[]): Promise<A> {
    if (this.#closed) return Promise.reject(this.#closedError());
    const id = ++this.#nextId;
    return new Promise<A>((resolve, reject) => {
      const pending = { resolve, reject } as Pending;
      if (!this.#options.coalesce) {
        this.#sendOne(id, request, pending, transfer ?? []);
        return;
      }
      this.#queue.push({ id, request });
      this.#queuedPending.push(pending);
      if (transfer) this.#queuedTransfer.push(...transfer);
      if (!this.#scheduled) {
        this.#scheduled = true;
        setImmediate(() => this.#flush());
      }
    });
  }

  warm(): void {
    if (this.#closed) return;
    for (let index = 0; index < this.#slots.length; index++) this.#slots[index] ??= this.#start(index);
  }

  close(): Promise<void> {
    return (this.#closing ??= this.#close());
  }

  async #close(): Promise<void> {
    this.#closed = true;
    if (this.#options.onClose === 'terminate') {
      const error = this.#closedError();
      for (const pending of this.#queuedPending) pending.reject(error);
      this.#takeQueue();
      // Exiting, each thread fails what it had with the closed error (see #start).
      await Promise.all(this.#slots.map((slot) => slot?.worker.terminate()));
      return;
    }
    this.#flush();
    await Promise.all(this.#slots.map((slot) => slot && this.#drain(slot.worker)));
  }

  /** Tells a thread to close once it has answered what it was sent (messages are handled in order); resolves when it exited. */
  async #drain(worker: Worker): Promise<void> {
    worker.ref();
    // Not events.once, which would reject on an 'error' (a close hook that threw): the thread exits all the same.
    const exited = new Promise<void>((resolve) => worker.once('exit', () => resolve()));
    worker.postMessage({ close: true });
    await exited;
  }

  #flush(): void {
    this.#scheduled = false;
    const { batch, pending, transfer } = this.#takeQueue();
    if (batch.length > 0) this.#sendBatch(batch, pending, transfer);
  }

  #takeQueue(): { batch: RequestBatch; pending: Pending[]; transfer: TransferListItem[] } {
    const taken = { batch: this.#queue, pending: this.#queuedPending, transfer: this.#queuedTransfer };
    this.#queue = [];
    this.#queuedPending = [];
    this.#queuedTransfer = [];
    return taken;
  }

  /** The thread whose turn it is, started if it is not running, referenced (it is about to have requests). */
  #nextThread(): Slot {
    const index = this.#slots.length === 1 ? 0 : this.#turn++ % this.#slots.length;
    const slot = (this.#slots[index] ??= this.#start(index));
    if (slot.pending.size === 0) slot.worker.ref();
    return slot;
  }

  /** Sends one request in a message of its own (no batch around it: the SQLite threads' round trip is a few tens of µs). */
  #sendOne(id: number, request: unknown, pending: Pending, transfer: readonly TransferListItem[]): void {
    const slot = this.#nextThread();
    slot.pending.set(id, pending);
    try {
      slot.worker.postMessage({ id, request }, transfer);
    } catch (error) {
      // A request that cannot be cloned (a function in it, say): nothing was sent.
      slot.pending.delete(id);
      if (slot.pending.size === 0) slot.worker.unref();
      pending.reject(error as Error);
    }
  }

  /** Sends a batch (coalescing) as one message. */
  #sendBatch(batch: RequestBatch, pending: Pending[], transfer: readonly TransferListItem[]): void {
    const slot = this.#nextThread();
    for (let at = 0; at < batch.length; at++) slot.pending.set(batch[at]!.id, pending[at]!);
    try {
      slot.worker.postMessage(batch, transfer);
    } catch (error) {
      // A request that cannot be cloned (a function in it, say): nothing was sent.
      for (let at = 0; at < batch.length; at++) slot.pending.delete(batch[at]!.id);
      if (slot.pending.size === 0) slot.worker.unref();
      for (const one of pending) one.reject(error as Error);
    }
  }

  #start(index: number): Slot {
    const worker = new Worker(this.#options.script, { workerData: this.#options.workerData });
    const threadId = worker.threadId;
    const slot: Slot = { worker, pending: new Map() };
    const answer = (reply: Reply) => {
      const pending = slot.pending.get(reply.id);
      if (!pending) return;
      slot.pending.delete(reply.id);
      if ('error' in reply) pending.reject(threadError(reply.error));
      else pending.resolve(reply.answer);
    };
    worker.on('message', (replies: Reply | Reply[]) => {
      if (Array.isArray(replies)) for (const reply of replies) answer(reply);
      else answer(replies);
      if (slot.pending.size === 0) worker.unref();
    });
    // An uncaught error is followed by the exit: whichever comes first fails the requests.
    const stopped = (reason: string, error?: Error) => {
      if (this.#slots[index] === slot) this.#slots[index] = undefined;
      if (slot.pending.size === 0) return;
      const failure = this.#closed ? this.#closedError() : this.#stoppedError({ pool: this.#options.name, thread: index, threadId, reason, ...(error ? { error } : {}) });
      for (const pending of slot.pending.values()) pending.reject(failure);
      slot.pending.clear();
    };
    worker.on('error', (error: unknown) => (error instanceof Error ? stopped(error.message, error) : stopped(`uncaught ${String(error)}`)));
    worker.on('exit', (code) => stopped(`exit code ${code}`));
    // After the listeners: adding a 'message' listener refs the worker's port again.
    worker.unref();
    return slot;
  }

  #closedError(): Error {
    return this.#options.errors?.closed?.(this.#options.name) ?? new WorkerPoolClosedError(this.#options.name);
  }

  #stoppedError(stop: ThreadStop): Error {
    const error = new WorkerThreadStoppedError(stop);
    return this.#options.errors?.stopped?.(error) ?? error;
  }
}

/** The error a thread's handler threw, as an Error here: its message, and its `code` when it had one (SQLite's). */
function threadError({ message, code }: { message: string; code?: string | number }): Error {
  const error = new Error(message);
  if (code) Object.assign(error, { code });
  return error;
}
