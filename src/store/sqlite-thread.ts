import { WorkerPoolClosedError, WorkerThreadStoppedError } from '../threads/errors.js';
import { openWorkerPool } from '../threads/pool.js';
import type { WorkerPool } from '../threads/types.js';

/** The thread's connection was closed (the database is closing) before or while a request was sent. */
export class SqliteThreadClosedError extends WorkerPoolClosedError {
  constructor(
    readonly file: string,
    readonly role: string,
  ) {
    super(`SQLite ${role} of ${file}`, `the SQLite ${role} of ${file} is closed: the database was closed while requests were still being made; stop its users before closing it`);
  }
}

/** The thread died with requests in it (they failed); the next request starts a new one on the same file. */
export class SqliteThreadStoppedError extends WorkerThreadStoppedError {
  constructor(
    readonly file: string,
    readonly role: string,
    stopped: WorkerThreadStoppedError,
  ) {
    super(stopped, `the SQLite ${role} thread of ${file} stopped (${stopped.reason}); the next request starts a new one`);
  }
}

/**
 * A worker thread with a SQLite connection of its own (the script
 * `script`, next to this file, serving through sqlite-thread-loop.cjs),
 * answering requests in the order they were sent: a pool of one thread
 * (threads/types.ts), which starts at the first request or warm(), is
 * referenced only while requests are outstanding, and on close answers
 * what it was sent before closing its connection. A thread that dies fails
 * what it had and the next request starts another. `role` (`writer`,
 * `reader`) is for messages; the thread gets `file` and `workerData`.
 */
export function openSqliteThread<Q extends object, A extends object>(script: URL, file: string, role: string, workerData: object): WorkerPool<Q, A> {
  return openWorkerPool<Q, A>({
    name: `SQLite ${role} of ${file}`,
    script,
    workerData: { file, ...workerData },
    onClose: 'drain',
    errors: {
      closed: () => new SqliteThreadClosedError(file, role),
      stopped: (stopped) => new SqliteThreadStoppedError(file, role, stopped),
    },
  });
}
