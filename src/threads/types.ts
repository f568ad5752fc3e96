/**
 * A worker-thread pool: a few threads running one script, answering the
 * requests the event loop hands them, so that work which would hold up the
 * event loop (SQLite's stepping, HMAC and JSON over a large body) runs on
 * another core. The pool is pool.ts; the thread side of every script is
 * serve.cjs. Its users: the SQLite writer and reader (store/sqlite-thread.ts)
 * and the webhook readers (replication/webhooks/readers.ts).
 *
 * Requests. A request is a structured-cloneable value (its buffers may be
 * transferred instead of copied) that the thread's handler turns into an
 * answer, synchronously. The answer comes back the same way, or the error
 * the handler threw: an Error with the thread's message and its `code`
 * (SQLite's, say) kept. A handler's error fails that request only; the
 * thread goes on with the next. A request that cannot be cloned (a
 * function in it) fails at once, an answer that cannot be fails its
 * request; coalescing, either fails the whole batch it went in.
 *
 * Ordering. Requests reach a thread in the order request() was called, and
 * a thread handles them one at a time in the order they arrived, so with
 * one thread the answers come in call order (the SQLite writer relies on
 * it: its batches commit in the order they were sent). With several
 * threads the requests (or, coalescing, the batches) go to the threads in
 * turn; nothing orders one thread's answers against another's.
 *
 * Coalescing. With `coalesce`, the requests of one turn of the event loop
 * go to one thread as one message (one wake-up of the thread, not one a
 * request), and its answers come back as one message; without it, each
 * request is sent at once, in a message of its own.
 *
 * Starting and the event loop. A thread starts at the first request sent
 * to it (or at warm()). It is referenced only while it has requests
 * outstanding: an idle pool, warmed or not, never keeps the process alive,
 * and a busy one does until its answers arrive.
 *
 * A thread that dies (process.exit in it, an uncaught throw, a crash):
 * every request it had fails with a WorkerThreadStoppedError naming the
 * pool, the thread and the cause (the exit code, or the uncaught error as
 * its `cause`); requests not yet sent to it are not affected. The pool is
 * not broken by it: the next request for that thread's turn starts a new
 * one. (Both users want that: a SQLite thread starts over on the same file,
 * a failed webhook delivery is redelivered by the forge.)
 *
 * Closing. close() is idempotent (every call resolves when the first is
 * done) and refuses later requests with a WorkerPoolClosedError. What
 * happens to requests already made depends on `onClose`:
 *  - `drain`: they are all sent and answered, then each thread is told to
 *    close (its script's close hook runs: the SQLite connection closes) and
 *    close() resolves once every thread has exited. For work whose caller
 *    must learn its outcome (a write batch is committed or not).
 *  - `terminate`: they fail with the closed error at once and the threads
 *    are terminated, even mid-request. For work that can be redone by
 *    someone else (a forge redelivers a webhook) and must not hold up a
 *    server that is shutting down.
 * A thread that dies while the pool is closing fails its requests with the
 * closed error.
 */
import type { TransferListItem } from 'node:worker_threads';
import type { WorkerThreadStoppedError } from './errors.js';

export interface WorkerPool<Q, A> {
  /**
   * Sends `request` to a thread; resolves with its answer, rejects with the
   * handler's error, a WorkerThreadStoppedError or a WorkerPoolClosedError
   * (or what the pool's `errors` made of the last two). `transfer`: buffers
   * of `request` to move to the thread rather than copy (unusable here after).
   */
  request(request: Q, transfer?: readonly TransferListItem[]): Promise<A>;
  /** Starts every thread now rather than at its first request (which would wait for it: tens of milliseconds). */
  warm(): void;
  /** Refuses new requests; then drains or terminates (see `onClose`). Idempotent. */
  close(): Promise<void>;
}

export interface WorkerPoolOptions {
  /** What the threads do, for messages and errors: `SQLite writer of /data/registry.sqlite`, `webhook reader`. */
  name: string;
  /** The thread's script; it calls serve() of serve.cjs once. */
  script: URL;
  /** Given to every thread as `workerData` (cloned). */
  workerData?: unknown;
  /** Threads in the pool, at least 1 (default 1). */
  threads?: number;
  /** Send the requests of one turn of the event loop as one message (see the contract above). */
  coalesce?: boolean;
  /** What close() does with requests already made (see the contract above). */
  onClose: 'drain' | 'terminate';
  /**
   * The errors the pool's users raise in place of its own, to keep their
   * types and messages; each gets the pool's error (kept as a `cause`, say).
   */
  errors?: {
    closed?: (pool: string) => Error;
    stopped?: (stopped: WorkerThreadStoppedError) => Error;
  };
}

/** Why a thread stopped: which one, and its exit code or uncaught error. */
export interface ThreadStop {
  /** The pool's name. */
  pool: string;
  /** Its place in the pool, from 0. */
  thread: number;
  /** Node's id of the thread (worker.threadId). */
  threadId: number;
  /** `exit code 3`, or the uncaught error's message. */
  reason: string;
  /** The uncaught error, when that is what stopped it. */
  error?: Error;
}

/**
 * The messages between the pool and serve.cjs. To the thread: one request
 * `{ id, request }` (not coalescing: as the SQLite threads did before the
 * pool, no array around it on their round trip of a few tens of µs), a
 * batch `[{ id, request }, ...]` (coalescing), or `{ close: true }` (drain:
 * the close hook runs, the thread exits). From the thread, in the same
 * shape: the reply `{ id, answer } | { id, error: { message, code } }`, or
 * the batch's replies in order.
 */
export type RequestBatch = { id: number; request: unknown }[];
export type Reply = { id: number; answer: unknown } | { id: number; error: { message: string; code?: string | number } };
