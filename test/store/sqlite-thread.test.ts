// The SQLite threads' pool settings (src/store/sqlite-thread.ts): their
// errors keep the SQLite writer's and reader's types and messages, and are
// the worker pool's too. The thread script is the pool tests' fixture, which
// dies on request (the pool's own behaviour is test/threads/worker-pool.test.ts).
import { afterEach, describe, expect, it } from 'vitest';
import { openSqliteThread, SqliteThreadClosedError, SqliteThreadStoppedError } from '../../src/store/sqlite-thread.js';
import { WorkerPoolClosedError, WorkerThreadStoppedError } from '../../src/threads/errors.js';
import type { WorkerPool } from '../../src/threads/types.js';

const SCRIPT = new URL('../threads/fixtures/pool.worker.cjs', import.meta.url);

const failure = (promise: Promise<unknown>) => promise.then(
  () => {
    throw new Error('expected a failure');
  },
  (error: unknown) => error as Error,
);

describe('SQLite thread (a worker pool of one thread on a SQLite file)', () => {
  let thread: WorkerPool<{ op: string; code?: number; value?: unknown }, { value?: unknown; threadId: number }>;
  afterEach(() => thread.close());

  it('fails what a dead thread had with SqliteThreadStoppedError, and starts a new thread on the next request', async () => {
    thread = openSqliteThread(SCRIPT, '/data/registry.sqlite', 'writer', {});
    const first = await thread.request({ op: 'echo', value: 1 });
    const error = await failure(thread.request({ op: 'exit', code: 4 }));
    expect(error).toBeInstanceOf(SqliteThreadStoppedError);
    expect(error).toBeInstanceOf(WorkerThreadStoppedError);
    expect(error).toMatchObject({ file: '/data/registry.sqlite', role: 'writer', reason: 'exit code 4', threadId: first.threadId });
    expect(error.message).toBe('the SQLite writer thread of /data/registry.sqlite stopped (exit code 4); the next request starts a new one');
    const next = await thread.request({ op: 'echo', value: 2 });
    expect(next.threadId).not.toBe(first.threadId);
  });

  it('refuses requests after close with SqliteThreadClosedError', async () => {
    thread = openSqliteThread(SCRIPT, '/data/registry.sqlite', 'reader', {});
    await thread.close();
    const error = await failure(thread.request({ op: 'echo' }));
    expect(error).toBeInstanceOf(SqliteThreadClosedError);
    expect(error).toBeInstanceOf(WorkerPoolClosedError);
    expect(error.message).toBe('the SQLite reader of /data/registry.sqlite is closed: the database was closed while requests were still being made; stop its users before closing it');
  });
});
