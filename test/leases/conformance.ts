import { spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { once } from 'node:events';
import { createInterface } from 'node:readline';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  InvalidLeaseKeyError,
  InvalidLeaseOptionError,
  LeaseExpiredError,
  LeaseLostError,
  LeaseUnavailableError,
  openLeaseManager,
  type LeaseManager,
} from '../../src/index.js';
import { aborted } from '../helpers.js';
import type { BackendUnderTest } from './backends.js';

const fixture = (name: string) => fileURLToPath(new URL(`./fixtures/${name}`, import.meta.url));

export interface ConformanceOptions {
  /** Removes the lease of `key` behind the manager's back, the backend's own way. */
  removeUnderneath?: (key: string) => Promise<void>;
  /**
   * Wipes all lease state of the keys starting with `prefix`, fence counters included, as the
   * backend loses it (a Redis restart without persistence, a FLUSHDB, a MySQL restart): the
   * next holder of such a key may get a fence below the ones handed out before.
   */
  resetStore: (prefix: string) => Promise<void>;
}

/** Far above any fence these tests get from a counter or from MySQL's clock (µs, ≈1.8e15 now). */
const HIGH_FLOOR = 4_000_000_000_000_000n;
const max = (a: bigint, b: bigint): bigint => (a > b ? a : b);

/** Starts a child process running a fixture; resolves with it once it printed its first line. */
export async function startChild(args: string[]): Promise<{ child: ChildProcess; firstLine: string }> {
  const child = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'inherit'] });
  const lines = createInterface({ input: child.stdout! });
  const [firstLine] = (await Promise.race([
    once(lines, 'line'),
    once(child, 'exit').then(([code]) => {
      throw new Error(`child ${args.join(' ')} exited with ${code} before printing`);
    }),
  ])) as [string];
  return { child, firstLine };
}

/** Runs the lease conformance suite against one backend. */
export function describeLeaseConformance(backend: BackendUnderTest, options: ConformanceOptions): void {
  describe(`lease conformance: ${backend.name}`, () => {
    let leases: LeaseManager;
    let other: LeaseManager;
    const prefix = `conf-${randomUUID().slice(0, 8)}:`;
    let n = 0;
    const freshKey = () => `${prefix}${++n}`;

    /** Whether the next holder of a key gets the previous fence + 1 (not on MySQL, whose fences follow the clock). */
    let counting = false;

    beforeAll(async () => {
      try {
        leases = await openLeaseManager(backend.url);
        other = await openLeaseManager(backend.url);
      } catch (error) {
        throw new Error(
          `${backend.name} at ${backend.url} is not reachable (${(error as Error).message}); start it with: ${backend.hint}`,
        );
      }
      const key = freshKey();
      const fences: bigint[] = [];
      for (let i = 0; i < 2; i++) {
        const lease = await leases.acquire(key, { ttlMs: 1000 });
        fences.push(lease.fence);
        await lease.release();
      }
      counting = fences[1] === fences[0]! + 1n;
    });
    afterAll(async () => {
      await leases?.close();
      await other?.close();
      // Raised fences may lie far in the future, and MySQL sweeps no row until the clock is past its fence.
      if (leases && other) await options.resetStore(prefix);
    });

    it('grants a free key with owner metadata and a fence, and refuses a second holder', async () => {
      const key = freshKey();
      const lease = await leases.tryAcquire(key, { ttlMs: 5000, owner: 'full sync' });
      expect(lease).not.toBeNull();
      expect(lease!.key).toBe(key);
      expect(typeof lease!.fence).toBe('bigint');
      expect(lease!.owner).toMatchObject({ name: 'full sync', pid: process.pid });
      expect(lease!.owner.host.length).toBeGreaterThan(0);
      expect(lease!.expiresAt.getTime()).toBeGreaterThan(lease!.owner.acquiredAt.getTime());
      expect(await other.tryAcquire(key, { ttlMs: 5000, owner: 'partial sync' })).toBeNull();
      const attempt = await other.attempt(key, { ttlMs: 5000 });
      expect(attempt.holder).toMatchObject({ key, fence: lease!.fence, owner: { name: 'full sync', pid: process.pid } });
      await lease!.release();
      expect(await other.inspect(key)).toBeNull();
    });

    it('tryAcquire never waits for the holder', async () => {
      const key = freshKey();
      const lease = await leases.acquire(key, { ttlMs: 20_000, owner: 'holder' });
      const started = Date.now();
      expect(await other.tryAcquire(key, { ttlMs: 1000 })).toBeNull();
      // Had it waited, it would have waited for the 20 s lease.
      expect(Date.now() - started).toBeLessThan(10_000);
      await lease.release();
    });

    it('a waiting acquire times out with LeaseUnavailableError naming the holder', async () => {
      const key = freshKey();
      const lease = await leases.acquire(key, { ttlMs: 10_000, owner: 'full sync' });
      const error = await other.acquire(key, { ttlMs: 1000, waitMs: 300, retryMs: 50 }).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(LeaseUnavailableError);
      expect((error as Error).message).toContain(`process locked by "full sync(${process.pid})"`);
      expect((error as LeaseUnavailableError).holder?.fence).toBe(lease.fence);
      await lease.release();
    });

    it('a waiting acquire gets the key when the holder lets go', async () => {
      const key = freshKey();
      const first = await leases.acquire(key, { ttlMs: 10_000 });
      setTimeout(() => void first.release(), 200);
      const second = await other.acquire(key, { ttlMs: 1000, waitMs: 5000, retryMs: 20 });
      expect(second.fence).toBeGreaterThan(first.fence);
      await second.release();
    });

    it('refuses extend and release by a stale token', async () => {
      const key = freshKey();
      const stale = await leases.acquire(key, { ttlMs: 10_000 });
      expect(await other.forceRelease(key)).toBe(true);
      const current = await other.acquire(key, { ttlMs: 10_000 });
      await expect(stale.extend()).rejects.toBeInstanceOf(LeaseLostError);
      expect(stale.signal.aborted).toBe(true);
      await expect(stale.release()).rejects.toBeInstanceOf(LeaseLostError);
      expect((await leases.inspect(key))?.fence).toBe(current.fence);
      await current.extend(10_000);
      await current.release();
    });

    it('refuses to extend an expired lease and does not re-acquire it', async () => {
      const key = freshKey();
      const lease = await leases.acquire(key, { ttlMs: 100 });
      await sleep(250);
      expect(lease.signal.aborted).toBe(true);
      await expect(lease.extend(5000)).rejects.toBeInstanceOf(LeaseExpiredError);
      expect(await other.inspect(key)).toBeNull();
      const next = await other.acquire(key, { ttlMs: 1000 });
      expect(next.fence).toBeGreaterThan(lease.fence);
      await next.release();
    });

    it('signals "about to lapse" before the ttl runs out', async () => {
      const key = freshKey();
      const lease = await leases.acquire(key, { ttlMs: 1000 });
      await aborted(lease.signal);
      expect(lease.signal.reason).toBeInstanceOf(LeaseExpiredError);
      // The client gave up before the backend lets anyone else in.
      expect(await other.tryAcquire(key, { ttlMs: 1000 })).toBeNull();
      await lease.release();
    });

    it('fences strictly increase across holders, expiry and reconnects', async () => {
      const key = freshKey();
      const fences: bigint[] = [];
      for (let i = 0; i < 5; i++) {
        const lease = await (i % 2 ? leases : other).acquire(key, { ttlMs: 5000 });
        fences.push(lease.fence);
        await lease.release();
      }
      const lapsing = await leases.acquire(key, { ttlMs: 50 });
      fences.push(lapsing.fence);
      await sleep(120);
      const reopened = await openLeaseManager(backend.url);
      try {
        const lease = await reopened.acquire(key, { ttlMs: 5000 });
        fences.push(lease.fence);
        await lease.release();
      } finally {
        await reopened.close();
      }
      for (let i = 1; i < fences.length; i++) expect(fences[i]!).toBeGreaterThan(fences[i - 1]!);
    });

    it('a heartbeat keeps a short lease alive well beyond its ttl', async () => {
      const key = freshKey();
      const result = await leases.withLease(key, { ttlMs: 300, owner: 'heartbeat' }, async (lease) => {
        await sleep(1200);
        expect(lease.signal.aborted).toBe(false);
        expect(await other.tryAcquire(key, { ttlMs: 1000 })).toBeNull();
        expect((await other.inspect(key))?.fence).toBe(lease.fence);
        return lease.fence;
      });
      expect(typeof result).toBe('bigint');
      expect(await other.inspect(key)).toBeNull();
    });

    it('tryWithLease runs work under a renewed lease and releases it, or names the holder without running it', async () => {
      const busy = freshKey();
      const held = await other.acquire(busy, { ttlMs: 10_000, owner: 'full sync' });
      let ran = false;
      const skipped = await leases.tryWithLease(busy, { ttlMs: 1000 }, async () => (ran = true));
      expect(skipped).toMatchObject({ ran: false, holder: { key: busy, fence: held.fence, owner: { name: 'full sync', pid: process.pid } } });
      expect(ran).toBe(false);
      await held.release();

      const key = freshKey();
      const done = await leases.tryWithLease(key, { ttlMs: 300, owner: 'short' }, async (lease, signal) => {
        await sleep(900);
        expect(signal.aborted).toBe(false);
        expect(await other.tryAcquire(key, { ttlMs: 1000 })).toBeNull();
        return lease.fence;
      });
      expect(done.ran && typeof done.value).toBe('bigint');
      expect(await other.inspect(key)).toBeNull();

      const failing = leases.tryWithLease(key, { ttlMs: 1000 }, async () => {
        throw new Error('work failed');
      });
      await expect(failing).rejects.toThrow('work failed');
      expect(await other.inspect(key)).toBeNull();
    });

    it("tryWithLease aborts the work's signal when the caller's signal aborts, and when the lease is lost", async () => {
      const key = freshKey();
      const stop = new AbortController();
      const result = await leases.tryWithLease(key, { ttlMs: 5000, signal: stop.signal }, async (_lease, signal) => {
        setTimeout(() => stop.abort(new Error('shutting down')), 20);
        return (await aborted(signal)) as Error;
      });
      expect(result.ran && result.value.message).toBe('shutting down');
      expect(await other.inspect(key)).toBeNull();

      const remove = options.removeUnderneath ?? (async (k: string) => void (await other.forceRelease(k)));
      const lost = await leases
        .tryWithLease(key, { ttlMs: 600 }, async (_lease, signal) => {
          await remove(key);
          await aborted(signal);
          throw new Error('git was killed');
        })
        .catch((e: unknown) => e);
      expect(lost).toBeInstanceOf(LeaseLostError);
      expect(((lost as Error).cause as Error).message).toBe('git was killed');
    });

    it('aborts lease.signal when the lease is removed underneath', async () => {
      const key = freshKey();
      const remove = options.removeUnderneath ?? (async (k: string) => void (await other.forceRelease(k)));
      const error = await leases
        .withLease(key, { ttlMs: 600 }, async (lease) => {
          await remove(key);
          await aborted(lease.signal);
          lease.signal.throwIfAborted();
        })
        .catch((e: unknown) => e);
      expect(error).toBeInstanceOf(LeaseLostError);
    });

    it('forceRelease honours the fence it is given', async () => {
      const key = freshKey();
      const lease = await leases.acquire(key, { ttlMs: 10_000 });
      expect(await other.forceRelease(key, { fence: lease.fence + 1n })).toBe(false);
      expect((await other.inspect(key))?.fence).toBe(lease.fence);
      expect(await other.forceRelease(key, { fence: lease.fence })).toBe(true);
      expect(await other.inspect(key)).toBeNull();
      expect(await other.forceRelease(key)).toBe(false);
    });

    it('lists live holders by prefix, literally', async () => {
      const base = `${prefix}list%_*[{}]:`;
      const held = await Promise.all(
        ['a', 'b', 'c'].map((suffix) => leases.acquire(`${base}${suffix}`, { ttlMs: 10_000, owner: `lister ${suffix}` })),
      );
      const decoy = await leases.acquire(`${prefix}listX_*[{}]:z`, { ttlMs: 10_000 });
      const listed = await other.list(base);
      expect(listed.map((holder) => holder.key)).toEqual([`${base}a`, `${base}b`, `${base}c`]);
      expect(listed[1]).toMatchObject({ fence: held[1]!.fence, owner: { name: 'lister b', pid: process.pid } });
      expect((await other.list(prefix)).length).toBeGreaterThanOrEqual(4);
      await Promise.all([...held, decoy].map((lease) => lease.release()));
      expect(await other.list(base)).toEqual([]);
    });

    it('rejects bad input with typed errors and leaves held leases alone', async () => {
      const key = freshKey();
      const lease = await leases.acquire(key, { ttlMs: 10_000 });
      await expect(leases.tryAcquire('', { ttlMs: 1000 })).rejects.toBeInstanceOf(InvalidLeaseKeyError);
      await expect(leases.tryAcquire('x'.repeat(256), { ttlMs: 1000 })).rejects.toBeInstanceOf(InvalidLeaseKeyError);
      await expect(leases.tryAcquire('bad\nkey', { ttlMs: 1000 })).rejects.toBeInstanceOf(InvalidLeaseKeyError);
      await expect(leases.tryAcquire(`${key} `, { ttlMs: 1000 })).rejects.toBeInstanceOf(InvalidLeaseKeyError);
      for (const ttlMs of [0, -5, 1.5, Number.NaN, 10 * 24 * 3600 * 1000]) {
        await expect(leases.tryAcquire(key, { ttlMs })).rejects.toBeInstanceOf(InvalidLeaseOptionError);
      }
      await expect(leases.acquire(key, { ttlMs: 1000, waitMs: -1 })).rejects.toBeInstanceOf(InvalidLeaseOptionError);
      await expect(leases.forceRelease(key, { fence: 'abc' })).rejects.toBeInstanceOf(InvalidLeaseOptionError);
      await expect(lease.extend(0)).rejects.toBeInstanceOf(InvalidLeaseOptionError);
      expect((await other.inspect(key))?.fence).toBe(lease.fence);
      // A 255-character key is fine.
      const long = await leases.acquire(`${prefix}${'k'.repeat(255 - prefix.length)}`, { ttlMs: 1000 });
      await long.release();
      await lease.release();
    });

    it('raiseFence lifts the holder above the floor, and later holders go on above it', async () => {
      const key = freshKey();
      const lease = await leases.acquire(key, { ttlMs: 10_000, owner: 'raiser' });
      const original = lease.fence;
      const floor = original + 1000n;
      const raised = await lease.raiseFence(floor);
      expect(raised).toBe(floor + 1n);
      expect(lease.fence).toBe(raised);
      expect((await other.inspect(key))?.fence).toBe(raised);
      expect((await other.list(key)).map((holder) => holder.fence)).toEqual([raised]);
      expect((await other.attempt(key, { ttlMs: 1000 })).holder).toMatchObject({ key, fence: raised, owner: { name: 'raiser' } });
      // The manager names its own holder by the raised fence too.
      expect((await leases.attempt(key, { ttlMs: 1000 })).holder?.fence).toBe(raised);
      expect(await other.forceRelease(key, { fence: original })).toBe(false);
      // One call at a time on the lease: the raise and a heartbeat's extend do not race.
      const [again] = await Promise.all([lease.raiseFence(raised + 1n), lease.extend()]);
      expect(again).toBe(raised + 2n);
      expect((await other.inspect(key))?.fence).toBe(again);
      await lease.release();

      const next = await other.acquire(key, { ttlMs: 100 });
      expect(next.fence).toBeGreaterThan(again);
      const before = next.fence;
      const lapsed = await next.raiseFence(before + 500n);
      expect(lapsed).toBe(before + 501n);
      await sleep(250);
      // next lapsed without a release: its successor still goes above its raised fence.
      const after = await leases.acquire(key, { ttlMs: 5000 });
      expect(after.fence).toBeGreaterThan(lapsed);
      expect((await other.inspect(key))?.fence).toBe(after.fence);
      await after.release();
    });

    it('raiseFence to a floor the fence is already above changes nothing', async () => {
      const key = freshKey();
      await (await leases.acquire(key, { ttlMs: 1000 })).release();
      const lease = await leases.acquire(key, { ttlMs: 10_000 });
      const fence = lease.fence; // at least 2, so fence - 1 is a valid floor
      expect(await lease.raiseFence(fence - 1n)).toBe(fence);
      expect(await lease.raiseFence(1)).toBe(fence);
      expect(await lease.raiseFence(String(fence - 1n))).toBe(fence);
      expect(lease.fence).toBe(fence);
      expect((await other.inspect(key))?.fence).toBe(fence);
      for (const floor of [0, -1, 1.5, 'abc', '', undefined, 2 ** 53, 2n ** 53n - 1n]) {
        await expect(lease.raiseFence(floor as never)).rejects.toBeInstanceOf(InvalidLeaseOptionError);
      }
      expect(lease.held).toBe(true);
      expect((await other.inspect(key))?.fence).toBe(fence);
      await lease.release();
      // Nor did the raises move the key's counter.
      const next = await other.acquire(key, { ttlMs: 10_000 });
      if (counting) expect(next.fence).toBe(fence + 1n);
      else expect(next.fence).toBeGreaterThan(fence);
      // A floor equal to the fence is not below it: the fence goes one above.
      const held = next.fence;
      expect(await next.raiseFence(held)).toBe(held + 1n);
      expect((await other.inspect(key))?.fence).toBe(held + 1n);
      await next.release();
    });

    it('refuses raiseFence by a stale token and leaves the current holder alone', async () => {
      const key = freshKey();
      const stale = await leases.acquire(key, { ttlMs: 10_000 });
      expect(await other.forceRelease(key)).toBe(true);
      const current = await other.acquire(key, { ttlMs: 10_000, waitMs: 5000 });
      const floor = current.fence + 100n;
      await expect(stale.raiseFence(floor)).rejects.toBeInstanceOf(LeaseLostError);
      expect(stale.signal.aborted).toBe(true);
      expect(stale.signal.reason).toBeInstanceOf(LeaseLostError);
      expect(current.fence).toBeGreaterThan(stale.fence);
      expect((await leases.inspect(key))?.fence).toBe(current.fence);
      await current.release();
      // Nor was anything raised for later holders.
      const next = await leases.acquire(key, { ttlMs: 1000 });
      if (counting) expect(next.fence).toBe(current.fence + 1n);
      else expect(next.fence).toBeGreaterThan(current.fence);
      await next.release();
      await expect(stale.release()).rejects.toBeInstanceOf(LeaseLostError);
    });

    it('keeps fences around 1.8e15 and up to 2^53 - 1 exact', async () => {
      for (const target of [1_800_000_000_000_001n, 2n ** 53n - 3n]) {
        const key = freshKey();
        const lease = await leases.acquire(key, { ttlMs: 10_000, owner: 'big' });
        // MySQL's fences are the clock in µs, which passes 1.8e15 in January 2027.
        const floor = max(target, lease.fence);
        const raised = await lease.raiseFence(floor);
        expect(raised).toBe(floor + 1n);
        expect((await other.inspect(key))?.fence).toBe(raised);
        expect((await other.list(key))[0]?.fence).toBe(raised);
        expect((await other.attempt(key, { ttlMs: 1000 })).holder?.fence).toBe(raised);
        await lease.release();

        const next = await other.acquire(key, { ttlMs: 10_000 });
        expect(next.fence).toBeGreaterThan(raised);
        if (target === 2n ** 53n - 3n) expect(next.fence).toBe(2n ** 53n - 1n);
        expect((await leases.inspect(key))?.fence).toBe(next.fence);
        expect((await leases.list(key))[0]?.fence).toBe(next.fence);
        expect((await leases.attempt(key, { ttlMs: 1000 })).holder?.fence).toBe(next.fence);
        // Its times are still a clock's, not a reading of a fence raised ahead of the clock.
        expect(Math.abs(next.owner.acquiredAt.getTime() - Date.now())).toBeLessThan(60_000);
        expect(next.expiresAt.getTime() - next.owner.acquiredAt.getTime()).toBe(10_000);

        const before = next.fence;
        expect(await next.raiseFence(before - 1n)).toBe(before);
        if (before < 2n ** 53n - 1n) expect(await next.raiseFence(before)).toBe(before + 1n);
        expect((await leases.inspect(key))?.fence).toBe(next.fence);
        // forceRelease with a fence compares the stored fence exactly.
        expect(await leases.forceRelease(key, { fence: next.fence - 1n })).toBe(false);
        expect(await leases.forceRelease(key, { fence: next.fence })).toBe(true);
        await expect(next.release()).rejects.toBeInstanceOf(LeaseLostError);
      }
    });

    it('after a store reset, the new holder raises above the old fences and the old holder cannot', async () => {
      const scope = `${prefix}reset-${++n}:`;
      const key = `${scope}k`;
      const old = await leases.acquire(key, { ttlMs: 20_000 });
      const oldFence = await old.raiseFence(max(HIGH_FLOOR, old.fence));
      await options.resetStore(scope);
      expect(await other.inspect(key)).toBeNull();

      const fresh = await other.acquire(key, { ttlMs: 20_000, waitMs: 5000 });
      // The store forgot the old fences: what a registry guarded by them then refuses.
      expect(fresh.fence).toBeLessThan(oldFence);
      await expect(old.raiseFence(oldFence)).rejects.toBeInstanceOf(LeaseLostError);
      expect(old.signal.aborted).toBe(true);
      expect((await leases.inspect(key))?.fence).toBe(fresh.fence);

      const raised = await fresh.raiseFence(oldFence);
      expect(raised).toBe(oldFence + 1n);
      expect((await leases.inspect(key))?.fence).toBe(raised);
      expect((await leases.list(scope)).map((holder) => holder.fence)).toEqual([raised]);
      await expect(old.raiseFence(raised)).rejects.toBeInstanceOf(LeaseLostError);
      expect((await leases.inspect(key))?.fence).toBe(raised);
      await expect(old.release()).rejects.toBeInstanceOf(LeaseLostError);
      await fresh.release();

      const next = await leases.acquire(key, { ttlMs: 1000 });
      expect(next.fence).toBeGreaterThan(raised);
      await next.release();
    });

    it('keeps several processes hammering one key mutually exclusive', async () => {
      const key = freshKey();
      const processes = 4;
      const rounds = 15;
      const children = Array.from({ length: processes }, () =>
        spawn(process.execPath, [fixture('hammer.mjs'), backend.url, key, String(rounds)], {
          stdio: ['ignore', 'pipe', 'inherit'],
        }),
      );
      const outputs = await Promise.all(
        children.map(async (child) => {
          let out = '';
          child.stdout!.on('data', (chunk: Buffer) => (out += chunk.toString()));
          const [code] = await once(child, 'exit');
          expect(code).toBe(0);
          return out;
        }),
      );
      const sections = outputs
        .flatMap((out) => out.trim().split('\n'))
        .map((line) => JSON.parse(line) as { start: string; end: string; fence: string })
        .map((s) => ({ start: BigInt(s.start), end: BigInt(s.end), fence: BigInt(s.fence) }))
        .sort((a, b) => (a.start < b.start ? -1 : 1));
      expect(sections).toHaveLength(processes * rounds);
      for (let i = 1; i < sections.length; i++) {
        expect(sections[i]!.start).toBeGreaterThan(sections[i - 1]!.end);
        expect(sections[i]!.fence).toBeGreaterThan(sections[i - 1]!.fence);
      }
    });

    it('frees the key within ttl + a small margin after its holder is SIGKILLed', async () => {
      const key = freshKey();
      const ttlMs = 1500;
      const { child, firstLine } = await startChild([fixture('holder.mjs'), backend.url, key, String(ttlMs), 'heartbeat']);
      const fence = BigInt(firstLine.split(' ')[1]!);
      await sleep(ttlMs); // the heartbeat has renewed it at least once by now
      expect((await leases.inspect(key))?.fence).toBe(fence);
      const killedAt = Date.now();
      child.kill('SIGKILL');
      await once(child, 'exit');
      const lease = await leases.acquire(key, { ttlMs: 1000, waitMs: ttlMs + 3000, retryMs: 25 });
      expect(Date.now() - killedAt).toBeLessThan(ttlMs + 1000);
      expect(lease.fence).toBeGreaterThan(fence);
      await lease.release();
    });
  });
}
