import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { once } from 'node:events';
import { createInterface } from 'node:readline';
import { Writable } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import { pino } from 'pino';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { openBullmqTransport } from '../../src/jobs/bullmq/transport.js';
import { JobBackendUnavailableError, UnsupportedJobsUrlError } from '../../src/jobs/errors.js';
import { openJobTransport } from '../../src/jobs/open.js';
import type { Job, JobTransport } from '../../src/jobs/types.js';
import { describeTransportConformance, until } from './conformance.js';
import { freePort } from '../support/free-port.js';

// The server of FORGESYNC_TEST_REDIS_URL, but not its db: db 0 belongs to other test files,
// db 2 is FLUSHed by one test here, the rest runs on db 1.
const REDIS_SERVER = new URL(process.env.FORGESYNC_TEST_REDIS_URL ?? 'redis://127.0.0.1:6379/0');
/** The test server's URL on `db`, with `query` (e.g. `?prefix=x`). */
function redisUrl(db: number, query = ''): string {
  const url = new URL(REDIS_SERVER);
  url.pathname = `/${db}`;
  url.search = query;
  return url.toString();
}
const quiet = pino({ level: 'silent' });
const prefixes: Array<{ db: number; prefix: string }> = [];

/** A URL on a prefix of its own, whose keys are deleted after the file. */
function freshUrl(db = 1): string {
  const prefix = `t-${randomBytes(6).toString('hex')}`;
  prefixes.push({ db, prefix });
  return redisUrl(db, `?prefix=${prefix}`);
}

afterAll(async () => {
  for (const { db, prefix } of prefixes.splice(0)) {
    const raw = new Redis(redisUrl(db));
    const keys = await raw.keys(`${prefix}:*`);
    if (keys.length) await raw.del(...keys);
    await raw.quit();
  }
});

/** A logger whose records land in `records`. */
function capturingLogger() {
  const records: Array<Record<string, unknown>> = [];
  const destination = new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (const line of chunk.toString().split('\n')) if (line) records.push(JSON.parse(line) as Record<string, unknown>);
      done();
    },
  });
  return { logger: pino({ level: 'debug' }, destination), records };
}

let lastUrl = '';
describeTransportConformance({
  name: 'bullmq',
  open: async () => openBullmqTransport((lastUrl = freshUrl()), { logger: quiet }),
  openPeer: async () => openBullmqTransport(lastUrl, { logger: quiet }),
});

const fixture = fileURLToPath(new URL('./fixtures/consumer.mjs', import.meta.url));
const built = fileURLToPath(new URL('../../dist/jobs/bullmq/transport.js', import.meta.url));

interface ConsumerLine {
  pid: number;
  event: 'ready' | 'start' | 'end';
  key?: string;
  start?: string;
  end?: string;
}

/** A consumer process (fixtures/consumer.mjs) and the lines it printed so far. */
class Consumer {
  readonly records: ConsumerLine[] = [];
  readonly child: ChildProcess;
  readonly exited: Promise<unknown[]>;

  constructor(url: string, concurrency: number, lockMs: number) {
    this.child = spawn(process.execPath, [fixture, url, String(concurrency), String(lockMs)], { stdio: ['ignore', 'pipe', 'inherit'] });
    this.exited = once(this.child, 'exit');
    createInterface({ input: this.child.stdout! }).on('line', (line) => {
      try {
        this.records.push(JSON.parse(line) as ConsumerLine);
      } catch {
        // a line cut short by SIGKILL
      }
    });
  }

  get pid(): number {
    return this.child.pid!;
  }

  async ready(): Promise<void> {
    await Promise.race([
      until('the consumer to be ready', () => this.records.some((r) => r.event === 'ready')),
      this.exited.then(([code]) => {
        throw new Error(`consumer exited with ${code} before it was ready`);
      }),
    ]);
  }

  async stop(): Promise<void> {
    if (this.child.exitCode !== null || this.child.signalCode !== null) return;
    this.child.kill('SIGTERM');
    const [code] = await this.exited;
    expect(code).toBe(0);
  }
}

describe('BullMQ transport', () => {
  const open: JobTransport[] = [];
  const consumers: Consumer[] = [];
  const track = <T extends JobTransport>(t: T): T => (open.push(t), t);
  afterEach(async () => {
    await Promise.all(open.splice(0).map((t) => t.close()));
    for (const c of consumers.splice(0)) {
      c.child.kill('SIGKILL');
      await c.exited;
    }
  });
  beforeAll(() => {
    if (!existsSync(built)) throw new Error(`the consumer fixture imports dist/: run \`npm run build\` first (${built} is missing)`);
  });

  it("runs a sharded kind's job only where its shard is served; other kinds anywhere", async () => {
    const url = freshUrl();
    const ran: Array<{ shard: string; kind: string; key: string }> = [];
    const serving = async (shard: string) => {
      const transport = track(await openBullmqTransport(url, { logger: quiet, shard }));
      transport.handle('sharded', { concurrency: 2, sharded: true, run: async (job) => void ran.push({ shard, kind: job.kind, key: job.key }) });
      transport.handle('anywhere', { concurrency: 2, run: async (job) => void ran.push({ shard, kind: job.kind, key: job.key }) });
      await transport.start();
      return transport;
    };
    const a = await serving('a');
    await serving('b');
    for (let i = 0; i < 6; i++) await a.enqueue({ kind: 'sharded', key: `to-b-${i}`, shard: 'b' });
    for (let i = 0; i < 3; i++) await a.enqueue({ kind: 'sharded', key: `to-a-${i}`, shard: 'a' });
    for (let i = 0; i < 4; i++) await a.enqueue({ kind: 'anywhere', key: `any-${i}` });
    await until('every job to run', () => ran.length === 13);
    for (const entry of ran.filter((r) => r.kind === 'sharded')) expect(entry.shard).toBe(entry.key.slice(3, 4));
    expect(ran.filter((r) => r.kind === 'anywhere').map((r) => r.key).sort()).toEqual(['any-0', 'any-1', 'any-2', 'any-3']);
    expect((await a.load('sharded')).queued).toBe(0);
    await expect(a.enqueue({ kind: 'sharded', key: 'bad', shard: 'Not A Shard' })).rejects.toThrow(/job shard "Not A Shard" must be/);
  });

  it("counts a shard's whole queue for any process: jobs running and waiting there, and its consumers' capacity", async () => {
    const url = freshUrl();
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const consumer = async () => {
      const transport = track(await openBullmqTransport(url, { logger: quiet, shard: 'b' }));
      transport.handle('sharded', { concurrency: 2, sharded: true, run: () => gate });
      await transport.start();
    };
    await consumer();
    await consumer();
    // A process serving another shard (the scheduler's, say) sees shard b's queue as it is.
    const elsewhere = track(await openBullmqTransport(url, { logger: quiet, shard: 'a' }));
    elsewhere.handle('sharded', { concurrency: 2, sharded: true, run: async () => {} });
    expect(await elsewhere.load('sharded', { shard: 'b' })).toEqual({ running: 0, queued: 0, capacity: 4 });
    for (let i = 0; i < 7; i++) await elsewhere.enqueue({ kind: 'sharded', key: `job-${i}`, shard: 'b' });
    await until('both consumers to run two each', async () => (await elsewhere.load('sharded', { shard: 'b' })).running === 4);
    expect(await elsewhere.load('sharded', { shard: 'b' })).toEqual({ running: 4, queued: 3, capacity: 4 });
    // Its own shard's queue is empty, and nobody consumes shard c.
    expect(await elsewhere.load('sharded', { shard: 'c' })).toEqual({ running: 0, queued: 0, capacity: 0 });
    release();
    await until('the queue to drain', async () => {
      const load = await elsewhere.load('sharded', { shard: 'b' });
      return load.queued + load.running === 0;
    });
  });

  it('queues jobs of a kind this process does not handle, for a process that does', async () => {
    const url = freshUrl();
    const producer = track(await openJobTransport(url, { logger: quiet }));
    expect(producer.name).toBe('bullmq');
    await producer.enqueue({ kind: 'sync', key: 'repo-1', payload: { trigger: 'cli' } });
    await producer.enqueue({ kind: 'sync', key: 'repo-1' });
    await producer.enqueue({ kind: 'sync', key: 'repo-2' });
    expect(await producer.load('sync')).toEqual({ running: 0, queued: 2, capacity: 0 });

    const consumer = track(await openBullmqTransport(url, { logger: quiet }));
    const seen: Job[] = [];
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    consumer.handle('sync', {
      concurrency: 3,
      run: async (job) => {
        seen.push(job);
        await gate;
      },
    });
    await consumer.start();
    await until('both jobs to start', () => seen.length === 2);
    expect(await consumer.load('sync')).toEqual({ running: 2, queued: 0, capacity: 3 });
    expect(seen.map((j) => j.key).sort()).toEqual(['repo-1', 'repo-2']);
    expect(seen.find((j) => j.key === 'repo-1')?.payload).toEqual({ trigger: 'cli' });
    release();
    await until('both jobs to finish', async () => (await consumer.load('sync')).running === 0);
  });

  it('keys its data under the prefix of the URL, and rejects unknown URL parameters', async () => {
    const url = freshUrl();
    const prefix = new URL(url).searchParams.get('prefix')!;
    const jobs = track(await openBullmqTransport(url, { logger: quiet }));
    await jobs.enqueue({ kind: 'sync', key: 'x' });
    const raw = new Redis(redisUrl(1));
    try {
      expect((await raw.keys(`${prefix}:sync:*`)).length).toBeGreaterThan(0);
      expect(await raw.keys('forgesync-jobs:*')).toEqual([]);
    } finally {
      await raw.quit();
    }
    await expect(openBullmqTransport(redisUrl(1, '?prefx=a'), { logger: quiet })).rejects.toBeInstanceOf(UnsupportedJobsUrlError);
    await expect(openBullmqTransport(redisUrl(1, '?prefix=a:b'), { logger: quiet })).rejects.toBeInstanceOf(UnsupportedJobsUrlError);
  });

  it('interleaves buckets round by round, first in first out within each, and starts the rounds over once drained', async () => {
    const jobs = track(await openBullmqTransport(freshUrl(), { logger: quiet }));
    const order: string[] = [];
    let open!: () => void;
    const gate = new Promise<void>((resolve) => (open = resolve));
    jobs.handle('sync', {
      concurrency: 1,
      run: async (job) => {
        order.push(job.key);
        if (job.key === 'gate') await gate;
      },
    });
    const backlog: Job[] = [
      ...['a1', 'a2', 'a3', 'a4', 'a5', 'a6'].map((key) => ({ kind: 'sync', key, fairness: 'github.com' })),
      ...['b1', 'b2', 'b3'].map((key) => ({ kind: 'sync', key, fairness: 'gitlab.com' })),
      ...['c1', 'c2'].map((key) => ({ kind: 'sync', key, fairness: 'codeberg.org' })),
    ];
    for (const job of backlog) await jobs.enqueue(job);
    await jobs.enqueue({ kind: 'sync', key: 'a2', fairness: 'github.com' }); // coalesced: keeps its place
    await jobs.start();
    await until('the backlog to run', () => order.length === 11);
    expect(order).toEqual(['a1', 'b1', 'c1', 'a2', 'b2', 'c2', 'a3', 'b3', 'a4', 'a5', 'a6']);

    // Drained, the rounds start over: github.com is not charged for its old backlog. (Were it,
    // its new jobs would get rounds 7 to 9, and gitlab.com's round 4 would run before them.)
    await sleep(300);
    order.length = 0;
    await jobs.enqueue({ kind: 'sync', key: 'gate', fairness: 'other' });
    await until('the gate job to start', () => order.includes('gate'));
    for (const key of ['a7', 'a8', 'a9']) await jobs.enqueue({ kind: 'sync', key, fairness: 'github.com' });
    await jobs.enqueue({ kind: 'sync', key: 'b4', fairness: 'gitlab.com' });
    open();
    await until('the new jobs to run', () => order.length === 5);
    expect(order).toEqual(['gate', 'a7', 'b4', 'a8', 'a9']);
  });

  it('never runs a key in two consumer processes at once', async () => {
    const url = freshUrl();
    const a = new Consumer(url, 4, 5000);
    const b = new Consumer(url, 4, 5000);
    consumers.push(a, b);
    await Promise.all([a.ready(), b.ready()]);
    const producer = track(await openBullmqTransport(url, { logger: quiet }));
    const keys = ['k1', 'k2', 'k3', 'k4', 'k5'];
    const lastNudge = new Map<string, bigint>();
    for (let round = 0; round < 80; round++) {
      await Promise.all(
        keys.map((key) => {
          lastNudge.set(key, process.hrtime.bigint());
          return producer.enqueue({ kind: 'sync', key });
        }),
      );
      if (round % 4 === 0) await sleep(2);
    }
    const ends = () => [...a.records, ...b.records].filter((r) => r.event === 'end');
    const starts = () => [...a.records, ...b.records].filter((r) => r.event === 'start').length;
    await until('the nudges to drain', async () => (await producer.load('sync')).queued === 0 && starts() === ends().length);
    await sleep(200); // a last follow-up may still be queued as its predecessor finishes
    await until('the last follow-ups', async () => (await producer.load('sync')).queued === 0 && starts() === ends().length);

    const runs = ends();
    // Coalescing keeps it far below the 400 nudges, but every key ran more than once.
    expect(runs.length).toBeLessThan(400);
    for (const key of keys) expect(runs.filter((r) => r.key === key).length).toBeGreaterThan(1);
    expect(new Set(runs.map((r) => r.pid))).toEqual(new Set([a.pid, b.pid]));
    let overlaps = 0;
    for (const key of keys) {
      const intervals = runs
        .filter((r) => r.key === key)
        .map((r) => [BigInt(r.start!), BigInt(r.end!)] as const)
        .sort((x, y) => (x[0] < y[0] ? -1 : 1));
      for (let i = 1; i < intervals.length; i++) if (intervals[i]![0] < intervals[i - 1]![1]) overlaps++;
    }
    expect(overlaps).toBe(0);
    // No nudge is lost: each key's last nudge was followed by a run that started after it was sent.
    for (const key of keys) {
      const lastStart = runs.filter((r) => r.key === key).reduce((max, r) => (BigInt(r.start!) > max ? BigInt(r.start!) : max), 0n);
      expect(lastStart).toBeGreaterThan(lastNudge.get(key)!);
    }
    await Promise.all([a.stop(), b.stop()]);
  });

  it('runs the job of a consumer that was killed mid-job in another consumer', async () => {
    const url = freshUrl();
    const lockMs = 1000;
    const first = new Consumer(url, 1, lockMs);
    consumers.push(first);
    await first.ready();
    const producer = track(await openBullmqTransport(url, { logger: quiet }));
    await producer.enqueue({ kind: 'sync', key: 'victim', payload: { ms: 60_000 } });
    await until('the first consumer to start the job', () => first.records.some((r) => r.event === 'start' && r.key === 'victim'));
    const second = new Consumer(url, 1, lockMs);
    consumers.push(second);
    await second.ready();
    first.child.kill('SIGKILL');
    await first.exited;
    const killedAt = Date.now();
    await until('the second consumer to run the job', () => second.records.some((r) => r.event === 'start' && r.key === 'victim'), 10_000);
    // Marked stalled by one check, moved back by the next: within about two lock periods.
    expect(Date.now() - killedAt).toBeLessThan(4 * lockMs + 1000);
    expect(first.records.some((r) => r.event === 'end')).toBe(false);
    await second.stop();
    expect(second.records.filter((r) => r.event === 'end').map((r) => r.key)).toEqual(['victim']);
  });

  it('survives FLUSHDB while a handler runs, and keeps running new jobs', async () => {
    const url = freshUrl(2);
    const { logger, records } = capturingLogger();
    const jobs = track(await openBullmqTransport(url, { logger }));
    const started: string[] = [];
    let busy = 0;
    let overlap = false;
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    jobs.handle('sync', {
      concurrency: 3,
      run: async (job) => {
        started.push(job.key);
        if (job.key === 'slow') {
          if (++busy > 1) overlap = true;
          if (started.filter((k) => k === 'slow').length === 1) await gate;
          busy--;
        }
      },
    });
    await jobs.start();
    await jobs.enqueue({ kind: 'sync', key: 'slow' });
    await until('the slow job to start', () => started.includes('slow'));

    const raw = new Redis(redisUrl(2));
    try {
      await raw.flushdb();
    } finally {
      await raw.quit();
    }
    // Redis forgot the running job: a new nudge of its key is a new job, which waits for the old one here.
    await jobs.enqueue({ kind: 'sync', key: 'slow' });
    await jobs.enqueue({ kind: 'sync', key: 'fresh' });
    await until('a new job to run after the wipe', () => started.includes('fresh'));
    await sleep(100);
    expect(started.filter((k) => k === 'slow')).toHaveLength(1);
    release();
    await until('the second slow job to run', () => started.filter((k) => k === 'slow').length === 2);
    expect(overlap).toBe(false);
    // The first slow job could not be finished in Redis: logged, not thrown.
    await until('the lost job to be logged', () =>
      records.some((r) => r.event === 'jobs_backend_error' && /Missing (key|lock)/.test(String(r.err))),
    );
    for (let i = 0; i < 5; i++) await jobs.enqueue({ kind: 'sync', key: `after${i}` });
    await until('jobs after the wipe', () => started.filter((k) => k.startsWith('after')).length === 5);
    expect(await jobs.load('sync')).toMatchObject({ running: 0, queued: 0 });
  });

  describe('on a redis-server of its own', () => {
    const servers: ThrowawayRedis[] = [];
    afterEach(async () => {
      await Promise.all(open.splice(0).map((t) => t.close()));
      await Promise.all(servers.splice(0).map((server) => server.stop()));
    });

    it('refuses a maxmemory-policy that evicts with JobBackendUnavailableError naming it; opens once it is noeviction', async () => {
      const server = await ThrowawayRedis.start(await freePort(), ['--maxmemory-policy', 'allkeys-lru']);
      servers.push(server);
      const url = `redis://127.0.0.1:${server.port}/0?prefix=policy`;
      const error = await openBullmqTransport(url, { logger: quiet }).then(
        () => undefined,
        (err: unknown) => err,
      );
      expect(error).toBeInstanceOf(JobBackendUnavailableError);
      expect((error as Error).message).toContain('allkeys-lru');
      expect((error as Error).message).toContain('CONFIG SET maxmemory-policy noeviction');
      await server.client.config('SET', 'maxmemory-policy', 'noeviction');
      const jobs = track(await openBullmqTransport(url, { logger: quiet }));
      await jobs.enqueue({ kind: 'sync', key: 'ok' });
      expect((await jobs.load('sync')).queued).toBe(1);
    });

    it('rejects enqueues while Redis is down, runs jobs again once it is back, and closes while it is down', async () => {
      const port = await freePort();
      let server = await ThrowawayRedis.start(port);
      servers.push(server);
      const { logger, records } = capturingLogger();
      const jobs = track(await openBullmqTransport(`redis://127.0.0.1:${port}/0`, { logger, lockMs: 2000 }));
      const ran: string[] = [];
      jobs.handle('sync', { concurrency: 2, run: async (job) => void ran.push(job.key) });
      await jobs.start();
      await jobs.enqueue({ kind: 'sync', key: 'before' });
      await until('the first job', () => ran.includes('before'));

      await server.stop();
      const failing = Date.now();
      await expect(jobs.enqueue({ kind: 'sync', key: 'during' })).rejects.toBeInstanceOf(JobBackendUnavailableError);
      expect(Date.now() - failing).toBeLessThan(1000);
      await expect(jobs.load('sync')).rejects.toBeInstanceOf(JobBackendUnavailableError);
      await until('the failing reconnects to be logged', () => records.some((r) => r.event === 'jobs_backend_error'), 5000);

      server = await ThrowawayRedis.start(port);
      servers.push(server);
      await until('an enqueue to go through again', () => jobs.enqueue({ kind: 'sync', key: 'after' }).then(() => true, () => false), 10_000);
      await until('the worker to run a job again', () => ran.includes('after'), 10_000);

      await server.stop();
      open.splice(open.indexOf(jobs), 1);
      const closing = Date.now();
      await jobs.close();
      expect(Date.now() - closing).toBeLessThan(6000);
    });
  });

  it('rejects an unreachable Redis quickly, without the password in the message', async () => {
    const startedAt = Date.now();
    const error = await openBullmqTransport('redis://forgesync:s3cret-pw@127.0.0.1:1/1', { logger: quiet }).then(
      () => undefined,
      (err: unknown) => err,
    );
    expect(Date.now() - startedAt).toBeLessThan(2500);
    expect(error).toBeInstanceOf(JobBackendUnavailableError);
    expect((error as Error).message).toContain('127.0.0.1:1');
    expect((error as Error).message).not.toContain('s3cret-pw');
  });
});

/** A redis-server on `port` that keeps nothing on disk, with a client; stop() kills it. */
class ThrowawayRedis {
  private constructor(
    readonly port: number,
    readonly process: ChildProcess,
    readonly client: Redis,
  ) {}

  static async start(port: number, args: string[] = []): Promise<ThrowawayRedis> {
    const child = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', ...args], {
      stdio: 'ignore',
    });
    const client = new Redis({ port, host: '127.0.0.1', lazyConnect: true, retryStrategy: () => 50, maxRetriesPerRequest: 1 });
    client.on('error', () => {});
    const server = new ThrowawayRedis(port, child, client);
    try {
      await until(`redis-server on port ${port}`, async () => (await client.ping().catch(() => '')) === 'PONG', 10_000);
    } catch (error) {
      await server.stop();
      throw error;
    }
    return server;
  }

  async stop(): Promise<void> {
    this.client.disconnect();
    if (this.process.exitCode !== null || this.process.signalCode !== null) return;
    this.process.kill('SIGKILL');
    await once(this.process, 'exit');
  }
}

