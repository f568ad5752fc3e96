import { setTimeout as sleep } from 'node:timers/promises';
import { afterEach, describe, expect, it } from 'vitest';
import { InvalidJobError } from '../../src/jobs/errors.js';
import type { Job, JobHandler, JobTransport } from '../../src/jobs/types.js';
import { aborted } from '../helpers.js';

export interface TransportUnderTest {
  name: string;
  /** A fresh transport on a queue of its own (nothing left from other tests). */
  open(): Promise<JobTransport>;
  /** Opens a second transport on the same queue as the last one open() returned, when the transport is shared. */
  openPeer?(): Promise<JobTransport>;
}

/** Waits until `check` is true, polling; fails with `what` after `timeoutMs`. */
export async function until(what: string, check: () => boolean | Promise<boolean>, timeoutMs = 15_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(5);
  }
}

/** A handler that records what ran, how many at once (overall and per key), and waits for `release` when asked. */
function recorder() {
  const ran: Job[] = [];
  const perKey = new Map<string, number>();
  let running = 0;
  const stats = { ran, peak: 0, overlaps: 0 };
  const gates = new Map<string, () => void>();
  const held = new Set<string>();
  const handler: JobHandler = async (job) => {
    stats.peak = Math.max(stats.peak, ++running);
    const same = (perKey.get(job.key) ?? 0) + 1;
    perKey.set(job.key, same);
    if (same > 1) stats.overlaps++;
    ran.push(job);
    try {
      if (held.has(job.key)) await new Promise<void>((resolve) => gates.set(job.key, resolve));
      else await sleep(2);
    } finally {
      running--;
      perKey.set(job.key, perKey.get(job.key)! - 1);
    }
  };
  const hold = (key: string) => held.add(key);
  const release = (key: string) => {
    held.delete(key);
    gates.get(key)?.();
    gates.delete(key);
  };
  const started = (key: string) => gates.has(key);
  return { handler, stats, hold, release, started };
}

/** The job transport conformance suite: every transport passes the same tests. */
export function describeTransportConformance(transport: TransportUnderTest): void {
  describe(`job transport conformance: ${transport.name}`, () => {
    const open: JobTransport[] = [];
    const fresh = async () => {
      const opened = await transport.open();
      open.push(opened);
      return opened;
    };
    afterEach(async () => {
      await Promise.all(open.splice(0).map((t) => t.close()));
    });

    it('says whether it is shared: what another process enqueues on its queue runs here only if so', async () => {
      const jobs = await fresh();
      const r = recorder();
      jobs.handle('alpha', { concurrency: 1, run: r.handler });
      await jobs.start();
      if (!transport.openPeer) {
        expect(jobs.shared).toBe(false);
        return;
      }
      expect(jobs.shared).toBe(true);
      const peer = await transport.openPeer();
      open.push(peer);
      expect(peer.shared).toBe(true);
      await peer.enqueue({ kind: 'alpha', key: 'from-the-peer' });
      await until('the peer\'s job to run here', () => r.stats.ran.some((job) => job.key === 'from-the-peer'));
    });

    it('runs no more jobs of a kind at once than its concurrency, each kind on its own', async () => {
      const jobs = await fresh();
      const a = recorder();
      const b = recorder();
      jobs.handle('alpha', { concurrency: 3, run: a.handler });
      jobs.handle('beta', { concurrency: 1, run: b.handler });
      await jobs.start();
      for (let i = 0; i < 20; i++) await jobs.enqueue({ kind: 'alpha', key: `a${i}`, fairness: `host${i % 4}` });
      for (let i = 0; i < 5; i++) await jobs.enqueue({ kind: 'beta', key: `b${i}` });
      await until('every job to run', () => a.stats.ran.length === 20 && b.stats.ran.length === 5);
      expect(a.stats.peak).toBeLessThanOrEqual(3);
      expect(a.stats.peak).toBeGreaterThan(1);
      expect(b.stats.peak).toBe(1);
    });

    it('coalesces per (kind, key): one waiting job, and one follow-up while one runs', async () => {
      const jobs = await fresh();
      const r = recorder();
      jobs.handle('sync', { concurrency: 2, run: r.handler });
      // Queued before the worker starts: five nudges of one key are one job.
      for (let i = 0; i < 5; i++) await jobs.enqueue({ kind: 'sync', key: 'queued', payload: { n: i } });
      await jobs.start();
      await until('the queued key to run', () => r.stats.ran.length === 1);
      await sleep(100);
      expect(r.stats.ran.map((job) => job.key)).toEqual(['queued']);
      // While a key runs, any number of nudges leave exactly one follow-up, which runs after it.
      r.hold('busy');
      await jobs.enqueue({ kind: 'sync', key: 'busy' });
      await until('the busy key to start', () => r.started('busy'));
      for (let i = 0; i < 10; i++) await jobs.enqueue({ kind: 'sync', key: 'busy', payload: { n: i } });
      await sleep(100);
      expect(r.stats.ran.filter((job) => job.key === 'busy')).toHaveLength(1);
      r.release('busy');
      await until('the follow-up to run', () => r.stats.ran.filter((job) => job.key === 'busy').length === 2);
      await sleep(150);
      expect(r.stats.ran.filter((job) => job.key === 'busy')).toHaveLength(2);
      expect(r.stats.overlaps).toBe(0);
    });

    it('never runs one key twice at once, however often it is nudged', async () => {
      const jobs = await fresh();
      const r = recorder();
      jobs.handle('sync', { concurrency: 4, run: r.handler });
      await jobs.start();
      for (let round = 0; round < 30; round++) {
        await Promise.all(['k1', 'k2', 'k3'].map((key) => jobs.enqueue({ kind: 'sync', key })));
        await sleep(1);
      }
      await until('the nudges to drain', async () => (await jobs.load('sync')).queued === 0 && (await jobs.load('sync')).running === 0);
      expect(r.stats.overlaps).toBe(0);
      expect(r.stats.ran.length).toBeGreaterThanOrEqual(3);
    });

    it('serves fairness buckets in turn so a busy host cannot starve a quiet one', async () => {
      const jobs = await fresh();
      const r = recorder();
      jobs.handle('sync', { concurrency: 1, run: r.handler });
      for (let i = 0; i < 12; i++) await jobs.enqueue({ kind: 'sync', key: `busy${i}`, fairness: 'github.com' });
      await jobs.enqueue({ kind: 'sync', key: 'quiet', fairness: 'gitlab.example.com' });
      await jobs.start();
      await until('all to run', () => r.stats.ran.length === 13);
      expect(r.stats.ran.findIndex((job) => job.key === 'quiet')).toBeLessThanOrEqual(2);
    });

    it('keeps going after a handler throws', async () => {
      const jobs = await fresh();
      const ran: string[] = [];
      jobs.handle('sync', {
        concurrency: 1,
        run: async (job) => {
          ran.push(job.key);
          if (job.key.startsWith('bad')) throw new Error(`${job.key} fails on purpose`);
        },
      });
      await jobs.start();
      for (const key of ['bad1', 'good1', 'bad2', 'good2']) await jobs.enqueue({ kind: 'sync', key });
      await until('every job to run', () => ran.length === 4);
      expect([...ran].sort()).toEqual(['bad1', 'bad2', 'good1', 'good2']);
      await jobs.enqueue({ kind: 'sync', key: 'after' });
      await until('a job after the failures', () => ran.includes('after'));
    });

    it('hands the payload to the handler', async () => {
      const jobs = await fresh();
      const seen: Job[] = [];
      jobs.handle('sync', { concurrency: 1, run: async (job) => void seen.push(job) });
      await jobs.start();
      await jobs.enqueue({ kind: 'sync', key: '42', payload: { trigger: 'webhook', n: 3, flag: true, none: null }, fairness: 'github.com' });
      await until('the job', () => seen.length === 1);
      expect(seen[0]).toMatchObject({ kind: 'sync', key: '42', payload: { trigger: 'webhook', n: 3, flag: true, none: null } });
    });

    it('aborts running handlers through their signal on close, and waits for them', async () => {
      const jobs = await fresh();
      let started = false;
      let finished = false;
      let reason: unknown;
      jobs.handle('sync', {
        concurrency: 1,
        run: async (_job, signal) => {
          started = true;
          reason = await aborted(signal);
          await sleep(50);
          finished = true;
        },
      });
      await jobs.start();
      await jobs.enqueue({ kind: 'sync', key: 'long' });
      await until('the handler to start', () => started);
      open.splice(open.indexOf(jobs), 1);
      await jobs.close();
      expect(reason).toBeInstanceOf(Error);
      expect(finished).toBe(true);
    });

    it('rejects malformed jobs and kinds with InvalidJobError, queueing nothing', async () => {
      const jobs = await fresh();
      const r = recorder();
      jobs.handle('sync', { concurrency: 1, run: r.handler });
      expect(() => jobs.handle('Bad Kind', { concurrency: 1, run: r.handler })).toThrow(InvalidJobError);
      expect(() => jobs.handle('other', { concurrency: 0, run: r.handler })).toThrow(InvalidJobError);
      expect(() => jobs.handle('sync', { concurrency: 1, run: r.handler })).toThrow(InvalidJobError);
      await jobs.start();
      for (const bad of [
        { kind: 'sync', key: '' },
        { kind: 'sync', key: 'has space' },
        { kind: '', key: 'x' },
        { kind: 'sync', key: 'x', payload: { nested: { a: 1 } } },
      ]) {
        await expect(jobs.enqueue(bad as unknown as Job)).rejects.toBeInstanceOf(InvalidJobError);
      }
      await sleep(100);
      expect(r.stats.ran).toHaveLength(0);
      expect(await jobs.load('sync')).toMatchObject({ running: 0, queued: 0, capacity: 1 });
    });
  });
}
