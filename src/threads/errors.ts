import { ForgesyncError } from '../errors.js';
import type { ThreadStop } from './types.js';

/**
 * A thread of the pool stopped (exited, or threw an uncaught error) with
 * this request in it. The pool is still usable: the next request starts a
 * new thread. `cause` is the uncaught error, when there was one.
 */
export class WorkerThreadStoppedError extends ForgesyncError {
  readonly pool: string;
  readonly thread: number;
  readonly threadId: number;
  readonly reason: string;

  constructor(stop: ThreadStop, message?: string) {
    super(
      message ??
        `the ${stop.pool} thread #${stop.thread + 1} (thread id ${stop.threadId}) stopped before answering (${stop.reason}); the request failed, and the next one starts a new thread`,
      stop.error ? { cause: stop.error } : undefined,
    );
    this.pool = stop.pool;
    this.thread = stop.thread;
    this.threadId = stop.threadId;
    this.reason = stop.reason;
  }
}

/** The pool was closed before the request was answered, or before it was made. */
export class WorkerPoolClosedError extends ForgesyncError {
  constructor(
    readonly pool: string,
    message = `the ${pool} is closed: it takes no more requests; stop its users before closing it`,
  ) {
    super(message);
  }
}
