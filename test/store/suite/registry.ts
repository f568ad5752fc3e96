import { describe, expect, it } from 'vitest';
import { SourceNotFoundError } from '../../../src/store/errors.js';
import { RegistryRepository } from '../../../src/replication/store/registry.js';
import type { StoreContext } from '../conformance.js';

const at = (ms: number) => new Date(Date.UTC(2025, 0, 1) + ms);

export function describeRegistry(ctx: StoreContext): void {
  describe('registry requests', () => {
    it('50 concurrent request() calls, from two connections, add exactly 50', async () => {
      const { id } = await ctx.add('hot');
      const second = await ctx.target.open();
      try {
        const other = new RegistryRepository(second);
        const seqs = await Promise.all(
          Array.from({ length: 50 }, (_, i) => (i % 2 ? other : ctx.registry).request(id, 'webhook')),
        );
        expect(seqs.slice().sort((a, b) => a - b)).toEqual(Array.from({ length: 50 }, (_, i) => i + 2));
        expect((await ctx.registry.get(id)).requestedSeq).toBe(51);
      } finally {
        await second.close();
      }
    });

    it('turns synced and failed rows pending (clearing the backoff) but leaves a started row started', async () => {
      const { id } = await ctx.add('r');
      await ctx.registry.start(id, 1n, at(0));
      await ctx.registry.finishFailed(id, 1n, { error: 'boom', nextRetryAt: at(60_000), missing: false, now: at(1) });
      expect(await ctx.registry.request(id, 'manual', at(2))).toBe(2);
      expect(await ctx.registry.get(id)).toMatchObject({ state: 'pending', nextRetryAt: null, retryCount: 1 });

      const row = (await ctx.registry.start(id, 2n, at(3)))!;
      expect(row).toMatchObject({ state: 'started', targetSeq: 2, fence: 2n, lastAttemptAt: at(3) });
      expect(await ctx.registry.request(id, 'webhook')).toBe(3);
      expect((await ctx.registry.get(id)).state).toBe('started');

      await ctx.registry.finishSynced(id, 2n, { targetSeq: 2, checksum: 'c', verified: true, now: at(4) });
      await ctx.registry.start(id, 2n, at(5));
      await ctx.registry.finishSynced(id, 2n, { targetSeq: 3, checksum: 'c', verified: true, now: at(6) });
      expect((await ctx.registry.get(id)).state).toBe('synced');
      expect(await ctx.registry.request(id, 'schedule')).toBe(4);
      expect((await ctx.registry.get(id)).state).toBe('pending');
    });

    it('refuses a request for an unknown source', async () => {
      await expect(ctx.registry.request(424242, 'cli')).rejects.toBeInstanceOf(SourceNotFoundError);
    });

    it('requestMany honours its filter exactly and returns the rows touched', async () => {
      const ids: Record<string, number> = {};
      for (const name of ['p1', 'p2', 's1', 's2', 's3', 'f1', 'st']) ids[name] = (await ctx.add(name)).id;
      for (const name of ['s1', 's2', 's3', 'f1', 'st']) await ctx.registry.start(ids[name]!, 1n, at(0));
      for (const name of ['s1', 's2', 's3']) {
        await ctx.registry.finishSynced(ids[name]!, 1n, { targetSeq: 1, checksum: 'x', verified: true, now: at(1) });
      }
      await ctx.registry.finishFailed(ids.f1!, 1n, { error: 'e', nextRetryAt: at(9e6), missing: false, now: at(1) });
      const seqs = async () =>
        Object.fromEntries(await Promise.all(Object.entries(ids).map(async ([n, id]) => [n, (await ctx.registry.get(id)).requestedSeq])));

      expect(await ctx.registry.requestMany('failed')).toBe(1);
      expect(await seqs()).toEqual({ p1: 1, p2: 1, s1: 1, s2: 1, s3: 1, f1: 2, st: 1 });
      expect((await ctx.registry.get(ids.f1!)).state).toBe('pending');

      expect(await ctx.registry.requestMany({ state: 'synced' })).toBe(3);
      expect(await seqs()).toEqual({ p1: 1, p2: 1, s1: 2, s2: 2, s3: 2, f1: 2, st: 1 });
      expect(await ctx.registry.requestMany({ state: 'synced' })).toBe(0); // now pending
      expect(await ctx.registry.requestMany({ state: 'started' })).toBe(1);
      expect((await ctx.registry.get(ids.st!)).state).toBe('started');
      expect(await ctx.registry.requestMany({ state: 'failed' })).toBe(0);

      expect(await ctx.registry.requestMany('all')).toBe(7);
      expect(await ctx.registry.requestMany({})).toBe(7);
      expect(await seqs()).toEqual({ p1: 3, p2: 3, s1: 4, s2: 4, s3: 4, f1: 4, st: 4 });
      expect(await ctx.registry.counts()).toMatchObject({ pending: 6, started: 1, synced: 0, failed: 0 });
    });
  });

  describe('registry fencing', () => {
    it('rejects writes with a lower fence, changing nothing; equal or higher fences apply', async () => {
      const { id } = await ctx.add('fenced');
      expect(await ctx.registry.start(id, 5n, at(0))).toMatchObject({ fence: 5n, state: 'started' });
      const before = await ctx.registry.get(id);

      expect(await ctx.registry.start(id, 4n, at(1))).toBeNull();
      expect(await ctx.registry.finishSynced(id, 4n, { targetSeq: 1, checksum: 'x', verified: true, now: at(1) })).toBe(false);
      expect(await ctx.registry.finishFailed(id, 4n, { error: 'e', nextRetryAt: at(2), missing: true, now: at(1) })).toBe(false);
      expect(await ctx.registry.releaseStarted(id, 4n)).toBe(false);
      expect(await ctx.registry.markVerification(id, 4n, { checksum: 'y', verified: false, now: at(1) })).toBe(false);
      expect(await ctx.registry.get(id)).toEqual(before);

      expect(await ctx.registry.start(id, 5n, at(2))).toMatchObject({ fence: 5n, lastAttemptAt: at(2) });
      expect(await ctx.registry.finishSynced(id, 5n, { targetSeq: 1, checksum: 'x', verified: true, now: at(3) })).toBe(true);
      expect(await ctx.registry.start(id, 6n, at(4))).toMatchObject({ fence: 6n });
      expect(await ctx.registry.finishFailed(id, 5n, { error: 'stale', nextRetryAt: null, missing: false, now: at(5) })).toBe(false);
      expect(await ctx.registry.get(id)).toMatchObject({ state: 'started', fence: 6n, lastFailure: null });
    });

    it('compares fences as 64-bit integers, exactly, beyond 2^53', async () => {
      const { id } = await ctx.add('big');
      const high = 2n ** 62n + 1n;
      expect((await ctx.registry.start(id, high, at(0)))!.fence).toBe(high);
      expect(await ctx.registry.releaseStarted(id, high - 1n)).toBe(false); // would be equal as a double
      expect((await ctx.registry.get(id)).fence).toBe(high);
      expect(await ctx.registry.releaseStarted(id, high)).toBe(true);
      expect(await ctx.registry.get(id)).toMatchObject({ state: 'pending', fence: high });
    });
  });

  describe('registry sync lifecycle', () => {
    it('a request arriving mid-sync leaves the row pending with completed_seq = target, then catches up', async () => {
      const { id } = await ctx.add('mid');
      const row = (await ctx.registry.start(id, 1n, at(0)))!;
      expect(row.targetSeq).toBe(1);
      expect(await ctx.registry.request(id, 'webhook')).toBe(2);
      expect(await ctx.registry.finishSynced(id, 1n, { targetSeq: row.targetSeq, checksum: 'c1', verified: true, mirrorPath: '/m/mid', now: at(1) })).toBe(true);
      expect(await ctx.registry.get(id)).toMatchObject({ state: 'pending', completedSeq: 1, requestedSeq: 2, lastSyncedAt: at(1) });

      const again = (await ctx.registry.start(id, 2n, at(2)))!;
      expect(again.targetSeq).toBe(2);
      await ctx.registry.finishSynced(id, 2n, { targetSeq: 2, checksum: 'c2', verified: true, now: at(3) });
      expect(await ctx.registry.get(id)).toMatchObject({
        state: 'synced', completedSeq: 2, retryCount: 0, nextRetryAt: null, lastSyncedAt: at(3),
        checksum: 'c2', verificationState: 'verified', verifiedAt: at(3), missingOnPrimary: false,
        mirrorPath: '/m/mid', // kept when not given
      });
      // An older target never lowers completed_seq.
      await ctx.registry.finishSynced(id, 2n, { targetSeq: 1, checksum: 'c2', verified: true, now: at(4) });
      expect((await ctx.registry.get(id)).completedSeq).toBe(2);
    });

    it('a checksum mismatch leaves the row pending so it is synced again', async () => {
      const { id } = await ctx.add('mm');
      await ctx.registry.start(id, 1n, at(0));
      await ctx.registry.finishSynced(id, 1n, { targetSeq: 1, checksum: 'bad', verified: false, now: at(1) });
      expect(await ctx.registry.get(id)).toMatchObject({ state: 'pending', completedSeq: 1, verificationState: 'mismatch', verifiedAt: null, checksum: 'bad' });
    });

    it('finishFailed counts retries, records the failure (truncated) and the missing flag; success resets them', async () => {
      const { id } = await ctx.add('fail');
      await ctx.registry.start(id, 1n, at(0));
      expect(await ctx.registry.finishFailed(id, 1n, { error: 'x'.repeat(5000), nextRetryAt: at(10), missing: false, now: at(1) })).toBe(true);
      let row = await ctx.registry.get(id);
      expect(row).toMatchObject({ state: 'failed', retryCount: 1, nextRetryAt: at(10), lastFailureAt: at(1), missingOnPrimary: false });
      expect(row.lastFailure!.length).toBe(2000);
      await ctx.registry.start(id, 1n, at(2));
      await ctx.registry.finishFailed(id, 1n, { error: 'repository not found', nextRetryAt: at(99), missing: true, now: at(3) });
      row = await ctx.registry.get(id);
      expect(row).toMatchObject({ state: 'failed', retryCount: 2, lastFailure: 'repository not found', missingOnPrimary: true, completedSeq: 0 });
      await ctx.registry.start(id, 1n, at(4));
      await ctx.registry.finishSynced(id, 1n, { targetSeq: 1, checksum: 'c', verified: true, now: at(5) });
      expect(await ctx.registry.get(id)).toMatchObject({ state: 'synced', retryCount: 0, nextRetryAt: null, missingOnPrimary: false });
    });

    it('releaseStarted and recoverStarted put only started rows back to pending', async () => {
      const a = await ctx.add('a');
      const b = await ctx.add('b');
      const c = await ctx.add('c');
      expect(await ctx.registry.releaseStarted(a.id, 1n)).toBe(false); // pending, not started
      for (const s of [a, b]) await ctx.registry.start(s.id, 3n, at(0));
      expect(await ctx.registry.releaseStarted(a.id, 3n)).toBe(true);
      expect(await ctx.registry.get(a.id)).toMatchObject({ state: 'pending', requestedSeq: 1 });
      expect(await ctx.registry.recoverStarted([])).toBe(0);
      expect(await ctx.registry.recoverStarted([a.id, b.id, c.id])).toBe(1);
      expect((await ctx.registry.get(b.id)).state).toBe('pending');
    });

    it('markVerification records a verified checksum, or a mismatch as a new request', async () => {
      const { id } = await ctx.add('ver');
      await ctx.registry.start(id, 1n, at(0));
      await ctx.registry.finishSynced(id, 1n, { targetSeq: 1, checksum: 'c', verified: true, now: at(1) });
      expect(await ctx.registry.markVerification(id, 2n, { checksum: 'c', verified: true, now: at(5) })).toBe(true);
      expect(await ctx.registry.get(id)).toMatchObject({ state: 'synced', verificationState: 'verified', verifiedAt: at(5), fence: 2n, requestedSeq: 1 });
      expect(await ctx.registry.markVerification(id, 2n, { checksum: 'd', verified: false, now: at(6) })).toBe(true);
      expect(await ctx.registry.get(id)).toMatchObject({ state: 'pending', verificationState: 'mismatch', verifiedAt: at(5), checksum: 'd', requestedSeq: 2 });
    });

    it('counts rows by state, verification and missing upstream', async () => {
      expect(await ctx.registry.counts()).toEqual({ pending: 0, started: 0, synced: 0, failed: 0, verified: 0, mismatch: 0, missing: 0 });
      const [s1, s2, f1, m1] = await Promise.all(['s1', 's2', 'f1', 'm1'].map((n) => ctx.add(n)));
      await ctx.add('p1');
      for (const s of [s1!, s2!, f1!, m1!]) await ctx.registry.start(s.id, 1n, at(0));
      await ctx.registry.finishSynced(s1!.id, 1n, { targetSeq: 1, checksum: 'c', verified: true, now: at(1) });
      await ctx.registry.finishSynced(s2!.id, 1n, { targetSeq: 1, checksum: 'c', verified: false, now: at(1) });
      await ctx.registry.finishFailed(f1!.id, 1n, { error: 'e', nextRetryAt: null, missing: true, now: at(1) });
      expect(await ctx.registry.counts()).toEqual({ pending: 2, started: 1, synced: 1, failed: 1, verified: 1, mismatch: 1, missing: 1 });
    });
  });
}
