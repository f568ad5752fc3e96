import { describe, expect, it } from 'vitest';
import { ATTEMPTS_KEPT_PER_SOURCE } from '../../../src/replication/store/attempts.js';
import type { StoreContext } from '../conformance.js';

const at = (ms: number) => new Date(Date.UTC(2025, 0, 1) + ms);

export function describeAttempts(ctx: StoreContext): void {
  describe('sync attempts', () => {
    it('records an attempt from start to finish, newest first', async () => {
      const { id } = await ctx.add('att');
      const first = await ctx.registry.startAttempt(id, { trigger: 'schedule', fence: 7n, now: at(0) });
      const second = await ctx.registry.startAttempt(id, { trigger: 'webhook', fence: 2n ** 60n, now: at(10) });
      expect(await ctx.registry.attempts(id)).toEqual([
        { id: second, sourceId: id, trigger: 'webhook', startedAt: at(10), finishedAt: null, result: null, error: null, refsChanged: null, durationMs: null, fence: 2n ** 60n },
        { id: first, sourceId: id, trigger: 'schedule', startedAt: at(0), finishedAt: null, result: null, error: null, refsChanged: null, durationMs: null, fence: 7n },
      ]);
      expect(await ctx.registry.finishAttempt(first, { result: 'synced', refsChanged: 3, now: at(1500) })).toBe(true);
      expect(await ctx.registry.finishAttempt(second, { result: 'failed', error: 'e'.repeat(3000), now: at(20) })).toBe(true);
      const [newest, oldest] = await ctx.registry.attempts(id);
      expect(oldest).toMatchObject({ result: 'synced', refsChanged: 3, finishedAt: at(1500), durationMs: 1500, error: null });
      expect(newest).toMatchObject({ result: 'failed', durationMs: 10, refsChanged: null });
      expect(newest!.error!.length).toBe(2000);
      expect(await ctx.registry.attempts(id, 1)).toHaveLength(1);
      expect(await ctx.registry.finishAttempt(999_999, { result: 'noop', now: at(0) })).toBe(false);
    });

    it(`keeps only the last ${ATTEMPTS_KEPT_PER_SOURCE} attempts of each source`, async () => {
      const { id } = await ctx.add('many');
      const other = await ctx.add('other');
      const otherAttempt = await ctx.registry.startAttempt(other.id, { trigger: 'cli', fence: null, now: at(0) });
      const ids: number[] = [];
      for (let i = 0; i < ATTEMPTS_KEPT_PER_SOURCE + 5; i++) ids.push(await ctx.registry.startAttempt(id, { trigger: 'retry', fence: 1n, now: at(i) }));
      const kept = await ctx.registry.attempts(id, 1000);
      expect(kept).toHaveLength(ATTEMPTS_KEPT_PER_SOURCE);
      expect(kept.map((a) => a.id)).toEqual(ids.slice(5).reverse());
      expect((await ctx.registry.attempts(other.id)).map((a) => a.id)).toEqual([otherAttempt]);
    });
  });
}
