import { describe, expect, it } from 'vitest';
import { RegistryRepository } from '../../../src/replication/store/registry.js';
import type { StoreContext } from '../conformance.js';

const T0 = Date.UTC(2025, 0, 1);
const at = (ms: number) => new Date(T0 + ms);
const HOUR = 3_600_000;
const CLAIM = 60_000;

export function describeScheduling(ctx: StoreContext): void {
  /** A registry whose default interval is 2 h and whose started rows are looked at again after 10 min. */
  const registry = () => new RegistryRepository(ctx.database, { defaultIntervalMs: 2 * HOUR, startedRecheckMs: 10 * 60_000 });

  /** Runs a sync of `name` that started at `startMs` and ended as told. */
  async function settle(name: string, startMs: number, end: 'synced' | 'failed' | 'missing' | 'started', retryAtMs?: number) {
    const source = (await ctx.sources.find(name)) ?? (await ctx.add(name));
    await registry().start(source.id, 1n, at(startMs));
    if (end === 'synced') {
      await registry().finishSynced(source.id, 1n, { targetSeq: 1, checksum: 'c', verified: true, now: at(startMs + 1) });
    } else if (end !== 'started') {
      const nextRetryAt = retryAtMs === undefined ? null : at(retryAtMs);
      await registry().finishFailed(source.id, 1n, { error: 'e', nextRetryAt, missing: end === 'missing', now: at(startMs + 1) });
    }
    return source;
  }

  describe('claimDue()', () => {
    const claim = async (ms: number, limit = 100) => (await registry().claimDue(at(ms), { limit, claimMs: CLAIM })).map((s) => s.name);

    it('claims exactly the rows with work to do, for each state, in the order they came due', async () => {
      const now = 10 * HOUR;
      await settle('started-fresh', now - 5 * 60_000, 'started'); // looked at again at now + 5 min
      await settle('started-stale', 9 * HOUR, 'started'); // looked at again at 9h10
      await ctx.add('pending-new');
      await ctx.add('pending-disabled', { enabled: false });
      await settle('failed-later', 1 * HOUR, 'failed', now + 1);
      await settle('failed-now', 2 * HOUR, 'failed', now);
      await settle('failed-no-retry', 2 * HOUR, 'failed');
      await settle('missing-later', 3 * HOUR, 'missing', now + HOUR);
      await settle('missing-now', 4 * HOUR, 'missing', now - 1);
      await settle('synced-recent', now - HOUR, 'synced'); // default interval 2 h: not yet
      await settle('synced-old', now - 3 * HOUR, 'synced'); // due at now - 1h + 1
      await ctx.add('synced-own-interval', { intervalMs: 30 * 60_000 });
      await settle('synced-own-interval', now - HOUR, 'synced'); // due at now - 30 min + 1
      await ctx.add('synced-long-interval', { intervalMs: 5 * HOUR });
      await settle('synced-long-interval', now - 3 * HOUR, 'synced');
      await ctx.add('synced-disabled');
      await settle('synced-disabled', 0, 'synced');
      await ctx.sources.update('synced-disabled', { enabled: false });

      expect(await claim(now)).toEqual(['pending-new', 'synced-old', 'started-stale', 'synced-own-interval', 'missing-now', 'failed-now']);
      // Claimed: not due again until the claim runs out (then swept), unless something happens.
      expect(await claim(now)).toEqual([]);
      // Then the swept ones (tied, by id) after the one that came due meanwhile; started-fresh is looked at later still.
      expect(await claim(now + CLAIM)).toEqual(['failed-later', 'started-stale', 'pending-new', 'failed-now', 'missing-now', 'synced-old', 'synced-own-interval']);
      expect(await claim(now + 5 * 60_000 - 1)).not.toContain('started-fresh');
      expect(await claim(now + 5 * 60_000)).toEqual(['started-fresh']);
    });

    it('honours the limit, leaving the rest due', async () => {
      for (const name of ['a', 'b', 'c']) await settle(name, 1000, 'failed', 0);
      expect(await claim(HOUR, 2)).toHaveLength(2);
      expect(await claim(HOUR, 2)).toHaveLength(1);
      expect(await claim(HOUR, 0)).toEqual([]);
    });

    it('a failed row comes due exactly at next_retry_at, a request makes it due at once, and a sync sets its next time', async () => {
      const source = await settle('retry', 0, 'failed', HOUR);
      expect(await claim(HOUR - 1)).toEqual([]);
      expect(await claim(HOUR)).toEqual(['retry']);
      await registry().request(source.id, 'manual', at(HOUR + 10));
      expect(await claim(HOUR + 10)).toEqual(['retry']);
      await registry().start(source.id, 1n, at(HOUR + 20));
      await registry().finishSynced(source.id, 1n, { targetSeq: 2, checksum: 'c', verified: true, now: at(HOUR + 30) });
      expect(await claim(3 * HOUR + 29)).toEqual([]);
      expect(await claim(3 * HOUR + 30)).toEqual(['retry']);
    });

    it('a disabled source is never claimed; enabled again, it is due at once', async () => {
      await settle('paused', 0, 'synced');
      await ctx.sources.update('paused', { enabled: false });
      expect(await claim(100 * HOUR)).toEqual([]);
      await ctx.sources.update('paused', { enabled: true });
      expect(await claim(Date.now() - T0)).toEqual(['paused']);
    });

    it('two schedulers claiming at once never get the same row', async () => {
      for (let i = 0; i < 40; i++) await ctx.add(`race-${String(i).padStart(2, '0')}`);
      const [first, second] = await Promise.all([claim(HOUR, 25), claim(HOUR, 25)]);
      expect(first!.filter((name) => second!.includes(name))).toEqual([]);
      expect(first!.length + second!.length).toBe(40);
    });
  });

  describe('dueForVerification()', () => {
    /** A source synced (and verified) at `syncedMs`. */
    async function synced(name: string, syncedMs: number, options: { enabled?: boolean } = {}) {
      const source = await settle(name, syncedMs - 1, 'synced');
      if (options.enabled === false) await ctx.sources.update(name, { enabled: false });
      return source;
    }
    const due = async (ms: number, limit = 100) => (await registry().dueForVerification(at(ms), { intervalMs: HOUR, limit })).map((s) => s.name);

    it('picks enabled synced mirrors never verified, then those verified longest ago, up to the limit', async () => {
      const now = 10 * HOUR;
      await synced('verified-3h', now - 3 * HOUR);
      await synced('verified-2h', now - 2 * HOUR);
      await synced('verified-30m', now - 30 * 60_000);
      await synced('disabled-old', now - 5 * HOUR, { enabled: false });
      const never = await synced('never-verified', now - 30 * 60_000);
      await ctx.database.db.updateTable('registry').set({ verified_at: null }).where('source_id', '=', never.id).execute();
      await ctx.add('pending-new');

      expect(await due(now)).toEqual(['never-verified', 'verified-3h', 'verified-2h']);
      expect(await due(now, 2)).toEqual(['never-verified', 'verified-3h']);
      expect(await due(now, 0)).toEqual([]);
      // Exactly the interval ago is due; a minute less is not.
      expect(await due(now - 30 * 60_000 + HOUR)).toContain('verified-30m');
      expect(await due(now - 31 * 60_000 + HOUR)).not.toContain('verified-30m');
      // Enabled again, the disabled source is due once more.
      await ctx.sources.update('disabled-old', { enabled: true });
      expect(await due(now)).toEqual(['never-verified', 'disabled-old', 'verified-3h', 'verified-2h']);
    });
  });
}
