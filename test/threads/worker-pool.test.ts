// The worker pool's contract (src/threads/types.ts), against the fixture
// thread script fixtures/pool.worker.cjs: answers and errors, ordering on one
// thread, many requests over several threads, threads that die mid-request,
// close while busy (drain and terminate), and an idle pool not keeping the
// event loop alive (a child process, fixtures/idle-child.mjs, on dist/).
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { WorkerPoolClosedError, WorkerThreadStoppedError } from '../../src/threads/errors.js';
import { openWorkerPool } from '../../src/threads/pool.js';
import type { WorkerPool, WorkerPoolOptions } from '../../src/threads/types.js';

const SCRIPT = new URL('./fixtures/pool.worker.cjs', import.meta.url);
const CHILD = fileURLToPath(new URL('./fixtures/idle-child.mjs', import.meta.url));
const COMPILED_POOL = fileURLToPath(new URL('../../dist/threads/pool.js', import.meta.url));

type Request =
  | { op: 'echo'; value: unknown }
  | { op: 'busy'; ms: number }
  | { op: 'hold' }
  | { op: 'fail'; message: string; code?: string }
  | { op: 'exit'; code: number }
  | { op: 'reverse'; bytes: Uint8Array }
  | { op: 'unclonable' };
type Answer = { value?: unknown; threadId: number; received: number; bytes?: Uint8Array };

const dir = mkdtempSync(join(tmpdir(), 'forgesync-pool-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

let pools: WorkerPool<Request, Answer>[] = [];
afterEach(async () => {
  await Promise.all(pools.map((pool) => pool.close()));
  pools = [];
});

function open(options: Partial<WorkerPoolOptions> & { workerData?: object } = {}): WorkerPool<Request, Answer> {
  const pool = openWorkerPool<Request, Answer>({ name: 'test pool', script: SCRIPT, onClose: 'drain', ...options });
  pools.push(pool);
  return pool;
}

const failure = (promise: Promise<unknown>) => promise.then(
  (answer) => {
    throw new Error(`expected a failure, got ${JSON.stringify(answer)}`);
  },
  (error: unknown) => error as Error,
);

/** The flags of the fixture's `hold` request: [0] releases it (never set here), [1] says the thread is holding. */
function holdFlags(): Int32Array {
  return new Int32Array(new SharedArrayBuffer(8));
}

describe('worker pool: requests and answers', () => {
  for (const coalesce of [false, true]) {
    it(`answers; a handler's error fails its request only, with its message and code (coalesce: ${coalesce})`, async () => {
      const pool = open({ coalesce });
      const [answer, failed, next] = await Promise.allSettled([
        pool.request({ op: 'echo', value: { nested: ['a', 1, null] } }),
        pool.request({ op: 'fail', message: 'no such column: nope', code: 'SQLITE_ERROR' }),
        pool.request({ op: 'echo', value: 'after' }),
      ]);
      expect(answer).toMatchObject({ status: 'fulfilled', value: { value: { nested: ['a', 1, null] } } });
      expect(failed).toMatchObject({ status: 'rejected', reason: { message: 'no such column: nope', code: 'SQLITE_ERROR' } });
      expect(next).toMatchObject({ status: 'fulfilled', value: { value: 'after', received: 3 } });
    });
  }

  it('fails a request whose answer cannot be sent, and goes on answering on the same thread', async () => {
    const pool = open();
    const first = await pool.request({ op: 'echo', value: 1 });
    expect((await failure(pool.request({ op: 'unclonable' }))).message).toMatch(/could not be cloned/);
    expect(await pool.request({ op: 'echo', value: 2 })).toMatchObject({ threadId: first.threadId, received: 3 });
  });

  it('fails a request that cannot be sent (not cloneable) at once, the pool unharmed', async () => {
    const pool = open();
    await expect(pool.request({ op: 'echo', value: () => 1 })).rejects.toThrow(/could not be cloned/);
    expect(await pool.request({ op: 'echo', value: 'still here' })).toMatchObject({ value: 'still here' });
  });

  it('transfers the buffers named both ways', async () => {
    const pool = open();
    const bytes = Uint8Array.from([1, 2, 3, 4]);
    const answer = await pool.request({ op: 'reverse', bytes }, [bytes.buffer]);
    expect(bytes.byteLength).toBe(0); // moved to the thread, not copied
    expect(Array.from(answer.bytes!)).toEqual([4, 3, 2, 1]);
  });

  it('refuses a pool without threads', () => {
    expect(() => open({ threads: 0 })).toThrow(RangeError);
  });
});

describe('worker pool: ordering and many requests', () => {
  for (const coalesce of [false, true]) {
    it(`handles and answers the requests sent to one thread in call order (coalesce: ${coalesce})`, async () => {
      const pool = open({ coalesce });
      const resolved: number[] = [];
      const answers = await Promise.all(
        Array.from({ length: 500 }, (_, index) =>
          pool.request(index % 50 === 0 ? { op: 'busy', ms: 2 } : { op: 'echo', value: index }).then((answer) => {
            resolved.push(index);
            return answer;
          }),
        ),
      );
      expect(answers.map((answer) => answer.received)).toEqual(Array.from({ length: 500 }, (_, index) => index + 1));
      expect(resolved).toEqual(Array.from({ length: 500 }, (_, index) => index));
    });
  }

  it('spreads many concurrent requests over the threads in turn, each answered with its own value', async () => {
    const pool = open({ threads: 3 });
    const answers = await Promise.all(Array.from({ length: 3000 }, (_, index) => pool.request({ op: 'echo', value: index })));
    expect(answers.map((answer) => answer.value)).toEqual(Array.from({ length: 3000 }, (_, index) => index));
    const perThread = new Map<number, number>();
    for (const answer of answers) perThread.set(answer.threadId, (perThread.get(answer.threadId) ?? 0) + 1);
    expect([...perThread.values()]).toEqual([1000, 1000, 1000]);
  });

  it('coalescing, sends the requests of one turn to one thread and the next turn to the next', async () => {
    const pool = open({ threads: 2, coalesce: true });
    const turns: Answer[][] = [];
    for (let turn = 0; turn < 4; turn++) {
      const sent = Array.from({ length: 200 }, (_, index) => pool.request({ op: 'echo', value: turn * 1000 + index }));
      turns.push(await Promise.all(sent));
    }
    for (const [turn, answers] of turns.entries()) {
      expect(new Set(answers.map((answer) => answer.threadId)).size).toBe(1);
      expect(answers.map((answer) => answer.value)).toEqual(Array.from({ length: 200 }, (_, index) => turn * 1000 + index));
    }
    expect(turns[0]![0]!.threadId).not.toBe(turns[1]![0]!.threadId);
    expect(turns[0]![0]!.threadId).toBe(turns[2]![0]!.threadId);
  });
});

describe('worker pool: a thread that dies', () => {
  for (const coalesce of [false, true]) {
    it(`fails what a thread had when it exits mid-request, naming it and the exit code, and starts a new one (coalesce: ${coalesce})`, async () => {
      const pool = open({ coalesce });
      const { threadId } = await pool.request({ op: 'busy', ms: 20 });
      // Coalescing, the two go in one batch; otherwise the second waits in the thread behind the first.
      const dying = failure(pool.request({ op: 'exit', code: 7 }));
      const behind = failure(pool.request({ op: 'echo', value: 'behind' }));
      for (const error of [await dying, await behind]) {
        expect(error).toBeInstanceOf(WorkerThreadStoppedError);
        expect(error).toMatchObject({ pool: 'test pool', thread: 0, threadId, reason: 'exit code 7' });
        expect(error.message).toMatch(/the test pool thread #1 .*stopped before answering \(exit code 7\)/);
      }
      const after = await pool.request({ op: 'echo', value: 'after' });
      expect(after).toMatchObject({ value: 'after', received: 1 });
      expect(after.threadId).not.toBe(threadId);
    });
  }

  it('fails the requests in a thread that throws an uncaught error, with that error as the cause', async () => {
    const pool = open({ workerData: { mode: 'throw-on-message' } });
    const errors = await Promise.all([failure(pool.request({ op: 'echo', value: 1 })), failure(pool.request({ op: 'echo', value: 2 }))]);
    for (const error of errors) {
      expect(error).toBeInstanceOf(WorkerThreadStoppedError);
      expect(error).toMatchObject({ reason: 'the fixture thread threw, uncaught', cause: { message: 'the fixture thread threw, uncaught' } });
    }
  });

  it('fails the requests of a thread whose script throws before serving', async () => {
    const pool = open({ workerData: { mode: 'throw-at-start' } });
    expect(await failure(pool.request({ op: 'echo', value: 1 }))).toMatchObject({ reason: 'the fixture thread threw at start' });
  });

  it('leaves the other threads and their requests alone', async () => {
    const pool = open({ threads: 2 });
    const onFirst = pool.request({ op: 'exit', code: 3 });
    const onSecond = pool.request({ op: 'busy', ms: 50 });
    expect(await failure(onFirst)).toMatchObject({ thread: 0, reason: 'exit code 3' });
    expect(await onSecond).toMatchObject({ received: 1 });
  });

  it("raises the user's errors in place of its own, the pool's kept as their cause", async () => {
    class UserStoppedError extends Error {}
    class UserClosedError extends Error {}
    const pool = open({
      onClose: 'terminate',
      errors: { stopped: (stopped) => new UserStoppedError(`user: ${stopped.reason}`, { cause: stopped }), closed: (name) => new UserClosedError(`user: ${name} closed`) },
    });
    const stopped = await failure(pool.request({ op: 'exit', code: 5 }));
    expect(stopped).toBeInstanceOf(UserStoppedError);
    expect(stopped).toMatchObject({ message: 'user: exit code 5', cause: expect.any(WorkerThreadStoppedError) });
    await pool.close();
    expect(await failure(pool.request({ op: 'echo', value: 1 }))).toMatchObject({ message: 'user: test pool closed' });
  });
});

describe('worker pool: close while busy', () => {
  for (const coalesce of [false, true]) {
    it(`drain: answers what was asked before close, runs the close hook, then refuses (coalesce: ${coalesce})`, async () => {
      const closedFile = join(dir, `drained-${coalesce}`);
      const pool = open({ coalesce, threads: 2, workerData: { closedFile } });
      const sent = [pool.request({ op: 'busy', ms: 100 }), ...Array.from({ length: 20 }, (_, value) => pool.request({ op: 'echo', value }))];
      const closing = pool.close();
      expect(pool.close()).toBe(closing);
      expect((await Promise.all(sent)).slice(1).map((answer) => answer.value)).toEqual(Array.from({ length: 20 }, (_, value) => value));
      await closing;
      expect(readFileSync(closedFile, 'utf8')).toMatch(/^closed after \d+ requests$/);
      const refused = await failure(pool.request({ op: 'echo', value: 'late' }));
      expect(refused).toBeInstanceOf(WorkerPoolClosedError);
      expect(refused.message).toMatch(/the test pool is closed/);
    });
  }

  for (const coalesce of [false, true]) {
    it(`terminate: stops a thread mid-request and fails what it was asked and what waits behind it (coalesce: ${coalesce})`, async () => {
      const release = holdFlags();
      const pool = open({ coalesce, onClose: 'terminate', workerData: { release } });
      const held = failure(pool.request({ op: 'hold' }));
      while (Atomics.load(release, 1) === 0) await new Promise((resolve) => setTimeout(resolve, 5));
      const notAnsweredYet = failure(pool.request({ op: 'echo', value: 'queued' }));
      await pool.close(); // the hold is never released: resolving at all means its thread was terminated
      for (const error of [await held, await notAnsweredYet]) expect(error).toBeInstanceOf(WorkerPoolClosedError);
      await expect(pool.request({ op: 'echo', value: 'late' })).rejects.toBeInstanceOf(WorkerPoolClosedError);
    });
  }

  it('closes an unused pool and a warmed one', async () => {
    await open().close();
    const warmed = open({ threads: 2 });
    warmed.warm();
    await warmed.close();
    warmed.warm(); // no thread after close
    await expect(warmed.request({ op: 'echo', value: 1 })).rejects.toBeInstanceOf(WorkerPoolClosedError);
  });
});

describe('worker pool: the event loop', () => {
  /** Runs the child scenario; resolves with its output lines and whether it exited on its own (killed after 30 s otherwise). */
  function child(scenario: string): Promise<{ lines: unknown[]; exitedAlone: boolean; code: number | null }> {
    if (!existsSync(COMPILED_POOL)) throw new Error(`the child process runs dist/: run \`npm run build\` first (${COMPILED_POOL} is missing)`);
    return new Promise((resolve) => {
      const running = spawn(process.execPath, [CHILD, scenario], { stdio: ['ignore', 'pipe', 'inherit'] });
      let output = '';
      running.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
      let killed = false;
      const guard = setTimeout(() => {
        killed = true;
        running.kill('SIGKILL');
      }, 30_000);
      running.on('exit', (code) => {
        clearTimeout(guard);
        const lines = output.split('\n').filter(Boolean).map((line) => JSON.parse(line) as unknown);
        resolve({ lines, exitedAlone: !killed, code });
      });
    });
  }

  it('an idle pool does not keep the process alive, a busy one does until its answer', async () => {
    const results = await Promise.all(['answered', 'warmed', 'busy', 'died', 'coalesced'].map(child));
    expect(results.map(({ exitedAlone, code }) => ({ exitedAlone, code }))).toEqual(Array(5).fill({ exitedAlone: true, code: 0 }));
    expect(results.map(({ lines }) => lines)).toEqual([
      [expect.objectContaining({ value: 'answered' })],
      ['warmed'],
      ['answered after the wait'],
      ['WorkerThreadStoppedError'],
      [[1, 2, 3, 4]],
    ]);
  });
});
