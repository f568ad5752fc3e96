import { describe, expect, it } from 'vitest';
import { SourceExistsError, SourceNotFoundError } from '../../../src/store/errors.js';
import type { StoreContext } from '../conformance.js';

export function describeSources(ctx: StoreContext): void {
  describe('sources', () => {
    it('creates a source with a pending registry row that asks for a first sync', async () => {
      const before = Date.now();
      const source = await ctx.sources.create({
        name: 'alpha',
        url: 'https://github.com/acme/alpha.git',
        credentialRef: 'env:GITHUB_TOKEN',
        intervalMs: 90_000,
        cron: '*/5 * * * *',
      });
      expect(source).toMatchObject({
        name: 'alpha',
        url: 'https://github.com/acme/alpha.git',
        credentialRef: 'env:GITHUB_TOKEN',
        intervalMs: 90_000,
        cron: '*/5 * * * *',
        enabled: true,
      });
      expect(typeof source.id).toBe('number');
      expect(source.createdAt.getTime()).toBeGreaterThanOrEqual(before);
      expect(source.registry).toEqual({
        sourceId: source.id,
        state: 'pending',
        retryCount: 0,
        nextRetryAt: null,
        lastAttemptAt: null,
        lastSyncedAt: null,
        lastFailure: null,
        lastFailureAt: null,
        checksum: null,
        verificationState: 'unverified',
        verifiedAt: null,
        missingOnPrimary: false,
        requestedSeq: 1,
        completedSeq: 0,
        targetSeq: 0,
        fence: null,
        mirrorPath: null,
      });
      expect(await ctx.sources.get('alpha')).toEqual(source);
      expect(await ctx.sources.findById(source.id)).toEqual(source);
      const bare = await ctx.add('bare', { enabled: false });
      expect(bare).toMatchObject({ credentialRef: null, intervalMs: null, cron: null, enabled: false });
    });

    it('returns null for an unknown name or id', async () => {
      expect(await ctx.sources.find('nope')).toBeUndefined();
      await expect(ctx.sources.get('nope')).rejects.toBeInstanceOf(SourceNotFoundError);
      expect(await ctx.sources.findById(987654)).toBeUndefined();
    });

    it('refuses a duplicate name with SourceExistsError and leaves the original intact', async () => {
      const original = await ctx.add('dup');
      const attempt = ctx.sources.create({ name: 'dup', url: 'https://elsewhere/dup.git' });
      await expect(attempt).rejects.toBeInstanceOf(SourceExistsError);
      await expect(attempt).rejects.toThrow(/"dup" already exists/);
      expect(await ctx.sources.get('dup')).toEqual(original);
      expect(await ctx.sources.count()).toBe(1);
    });

    it('lists sorted by name in code point order, filters by state and search, and paginates', async () => {
      for (const name of ['delta', 'Zulu', 'alpha', 'charlie', 'bravo']) await ctx.add(name);
      await ctx.add('percent', { url: 'https://host/100%_done.git' });
      const names = async (filter = {}) => (await ctx.sources.list(filter)).map((s) => s.name);
      expect(await names()).toEqual(['Zulu', 'alpha', 'bravo', 'charlie', 'delta', 'percent']);
      expect(await names({ limit: 2 })).toEqual(['Zulu', 'alpha']);
      expect(await names({ limit: 2, offset: 2 })).toEqual(['bravo', 'charlie']);
      expect(await names({ offset: 4 })).toEqual(['delta', 'percent']);
      expect(await names({ search: 'ZU' })).toEqual(['Zulu']);
      expect(await names({ search: 'git.example.com/a' })).toEqual(['alpha']);
      expect(await names({ search: '%_' })).toEqual(['percent']); // wildcards are literal
      expect(await names({ search: '_' })).toEqual(['percent']);
      const bravo = await ctx.sources.get('bravo');
      await ctx.registry.start(bravo.id, 1n, new Date());
      expect(await names({ state: 'started' })).toEqual(['bravo']);
      expect(await names({ state: 'pending', search: 'HA' })).toEqual(['alpha', 'charlie']);
      expect(await names({ state: 'pending', search: 'ha', limit: 1, offset: 1 })).toEqual(['charlie']);
      expect(await ctx.sources.count()).toBe(6);
      expect(await ctx.sources.count({ state: 'pending' })).toBe(5);
      expect(await ctx.sources.count({ search: 'ha' })).toBe(2);
      expect(await ctx.sources.count({ state: 'started', search: 'ha' })).toBe(0);
      expect(await ctx.sources.count({ state: 'failed' })).toBe(0);
    });

    it('updates fields, and a new URL resets verification and records a request', async () => {
      const source = await ctx.add('upd');
      await ctx.registry.start(source.id, 1n, new Date());
      await ctx.registry.finishSynced(source.id, 1n, { targetSeq: 1, checksum: 'abc', verified: true, now: new Date() });
      const scheduled = await ctx.sources.update('upd', { intervalMs: 5000, cron: null, enabled: false, credentialRef: 'env:T' });
      expect(scheduled).toMatchObject({ intervalMs: 5000, enabled: false, credentialRef: 'env:T' });
      expect(scheduled.registry).toMatchObject({ state: 'synced', checksum: 'abc', requestedSeq: 1 });
      expect(scheduled.updatedAt.getTime()).toBeGreaterThanOrEqual(source.updatedAt.getTime());

      const same = await ctx.sources.update('upd', { url: source.url });
      expect(same.registry).toMatchObject({ state: 'synced', checksum: 'abc', requestedSeq: 1 });

      const moved = await ctx.sources.update('upd', { url: 'https://new.example.com/upd.git', name: 'upd2' });
      expect(moved).toMatchObject({ name: 'upd2', url: 'https://new.example.com/upd.git', id: source.id });
      expect(moved.registry).toMatchObject({
        state: 'pending',
        checksum: null,
        verificationState: 'unverified',
        verifiedAt: null,
        requestedSeq: 2,
        completedSeq: 1,
      });
      expect(await ctx.sources.find('upd')).toBeUndefined();
    });

    it('refuses renaming onto a taken name and updating an unknown source', async () => {
      await ctx.add('one');
      await ctx.add('two');
      await expect(ctx.sources.update('two', { name: 'one', url: 'https://x/y.git' })).rejects.toBeInstanceOf(SourceExistsError);
      expect((await ctx.sources.get('two')).url).toBe('https://git.example.com/two.git');
      expect((await ctx.sources.get('two')).registry.requestedSeq).toBe(1); // rolled back
      await expect(ctx.sources.update('ghost', { intervalMs: 1 })).rejects.toBeInstanceOf(SourceNotFoundError);
    });

    it('removes a source with its registry row and attempts', async () => {
      const source = await ctx.add('gone');
      const kept = await ctx.add('kept');
      await ctx.registry.startAttempt(source.id, { trigger: 'manual', fence: 1n, now: new Date() });
      await ctx.registry.startAttempt(kept.id, { trigger: 'manual', fence: 1n, now: new Date() });
      expect(await ctx.sources.remove('gone')).toBe(true);
      expect(await ctx.sources.find('gone')).toBeUndefined();
      expect(await ctx.registry.find(source.id)).toBeUndefined();
      await expect(ctx.registry.get(source.id)).rejects.toBeInstanceOf(SourceNotFoundError);
      expect(await ctx.registry.attempts(source.id)).toEqual([]);
      expect(await ctx.registry.attempts(kept.id)).toHaveLength(1);
      expect(await ctx.sources.remove('gone')).toBe(false);
      expect(await ctx.sources.count()).toBe(1);
    });
  });
}
