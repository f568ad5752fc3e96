import { existsSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { STALE_LOCK_AGE_MS } from '../../src/git/locks.js';
import { plantLock } from '../support/git-fixtures.js';
import { Upstream } from '../support/upstream.js';
import { createTestDatabase, openTestForgesync, refsOf, testConfig } from '../support/harness.js';

/**
 * A worker killed while git updated a mirror's refs leaves lock files under `refs/`
 * behind; without cleanup every later fetch of that source failed with
 * "Unable to create '….lock': File exists". The sync service removes such a
 * lock once it is old enough and says so in the log, naming the source.
 */
describe('a stale git lock left in a mirror by a killed git', () => {
  it('is removed under the source\'s lease, logged at warn, and the source syncs again', async () => {
    const database = await createTestDatabase('sqlite');
    const { app, logs } = await openTestForgesync(testConfig(database.url));
    try {
      const upstream = Upstream.create();
      const source = await app.replication.addSource({ url: upstream.bare, name: 'locked' });
      const mirror = (await app.replication.sync(source.name)).registry.mirrorPath!;
      upstream.commit('main');
      // What a git SIGKILLed mid-`fetch --atomic` leaves, a minute ago.
      const lock = plantLock(mirror, 'refs/heads/main.lock', STALE_LOCK_AGE_MS + 30_000);

      const status = await app.replication.sync(source.name);

      expect(status.registry.state).toBe('synced');
      expect(refsOf(mirror)).toBe(refsOf(upstream.bare));
      expect(existsSync(lock)).toBe(false);
      const removed = logs.lines.filter((line) => line.event === 'stale_git_lock_removed');
      expect(removed).toHaveLength(1);
      expect(removed[0]).toMatchObject({ level: 40, source: 'locked', path: 'refs/heads/main.lock' });
      expect(removed[0]!.age_ms as number).toBeGreaterThanOrEqual(STALE_LOCK_AGE_MS);
    } finally {
      await app.close();
      await database.drop();
    }
  });
});
