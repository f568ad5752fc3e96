import { describe, expect, it } from 'vitest';
import type { StoreContext } from '../conformance.js';

const T0 = Date.UTC(2025, 0, 1);
const at = (ms: number) => new Date(T0 + ms);
const HOUR = 3_600_000;

export function describeScheduling(ctx: StoreContext): void {
  describe('due()', () => {
    /** Runs a sync of `name` that started at `startMs` and ended as told. */
    async function settle(name: string, startMs: number, end: 'synced' | 'failed' | 'missing' | 'started', retryAtMs?: number) {
      const source = (await ctx.sources.get(name)) ?? (await ctx.add(name));
      await ctx.registry.start(source.id, 1n, at(startMs));
      if (end === 'synced') {
        await ctx.registry.finishSynced(source.id, 1n, { targetSeq: 1, checksum: 'c', verified: true, now: at(startMs + 1) });
      } else if (end !== 'started') {
        const nextRetryAt = retryAtMs === undefined ? null : at(retryAtMs);
        await ctx.registry.finishFailed(source.id, 1n, { error: 'e', nextRetryAt, missing: end === 'missing', now: at(startMs + 1) });
      }
      return source;
    }

    it('selects exactly the rows with work to do, for each state', async () => {
      const now = 10 * HOUR;
      await ctx.add('pending-new');
      await ctx.add('pending-disabled', { enabled: false });
      await settle('started', 9.5 * HOUR, 'started');
      await settle('failed-later', 1 * HOUR, 'failed', now + 1);
      await settle('failed-now', 2 * HOUR, 'failed', now);
      await settle('failed-no-retry', 2 * HOUR, 'failed');
      await settle('missing-later', 3 * HOUR, 'missing', now + HOUR);
      await settle('missing-now', 4 * HOUR, 'missing', now - 1);
      await settle('synced-recent', now - HOUR, 'synced'); // default interval 2 h: not yet
      await settle('synced-old', now - 3 * HOUR, 'synced'); // synced at now - 3h + 1
      await ctx.add('synced-own-interval', { intervalMs: 30 * 60_000 });
      await settle('synced-own-interval', now - HOUR, 'synced');
      await ctx.add('synced-long-interval', { intervalMs: 5 * HOUR });
      await settle('synced-long-interval', now - 3 * HOUR, 'synced');
      await ctx.add('synced-disabled', { enabled: false });
      await settle('synced-disabled', 0, 'synced');

      const due = await ctx.registry.due(at(now), { defaultIntervalMs: 2 * HOUR, limit: 100 });
      expect(due.map((s) => s.name)).toEqual([
        'pending-new', // never attempted: first
        'failed-now',
        'missing-now',
        'synced-old',
        'synced-own-interval',
        'started',
      ]);
      expect(due[0]!.registry.state).toBe('pending');
      expect(due.at(-1)!.registry.state).toBe('started');
    });

    it('orders by oldest attempt first, never-attempted first of all, and honours the limit', async () => {
      await settle('b', 5000, 'failed', 0);
      await settle('a', 1000, 'failed', 0);
      await ctx.add('c');
      await settle('d', 3000, 'failed', 0);
      const names = async (limit: number) =>
        (await ctx.registry.due(at(HOUR), { defaultIntervalMs: HOUR, limit })).map((s) => s.name);
      expect(await names(10)).toEqual(['c', 'a', 'd', 'b']);
      expect(await names(2)).toEqual(['c', 'a']);
      expect(await names(0)).toEqual([]);
    });

    it('a failed row becomes due exactly at next_retry_at, and a request makes it due at once', async () => {
      const source = await settle('retry', 0, 'failed', HOUR);
      const isDue = async (ms: number) =>
        (await ctx.registry.due(at(ms), { defaultIntervalMs: HOUR, limit: 10 })).some((s) => s.id === source.id);
      expect(await isDue(HOUR - 1)).toBe(false);
      expect(await isDue(HOUR)).toBe(true);
      await ctx.registry.request(source.id, 'manual', at(10));
      expect(await isDue(10)).toBe(true);
    });
  });
}
