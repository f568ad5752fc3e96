import { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { Upstream } from '../support/upstream.js';
import { createTestDatabase, eventually, openTestForgesync, refsOf, testConfig, testJobsUrl } from '../support/harness.js';

/**
 * Jobs are nudges: the registry holds every request. When the job queue's
 * Redis loses its data mid-run (FLUSHDB here; a restart without
 * persistence, a failover), the scheduler nudges whatever is still pending
 * again, and every source converges.
 */
describe('BullMQ jobs wiped from Redis mid-run', () => {
  it('the scheduler re-enqueues what is pending and every source converges', async () => {
    const jobsUrl = testJobsUrl(6);
    const database = await createTestDatabase('sqlite');
    const config = testConfig(database.url, { FORGESYNC_JOBS_URL: jobsUrl, FORGESYNC_MAX_CONCURRENT_SYNCS: '2' });
    const { app } = await openTestForgesync(config);
    const redis = new Redis(jobsUrl);
    try {
      // Slow clones, so that jobs are still queued when the data goes.
      const run = app.runner.run.bind(app.runner);
      app.runner.run = async (args, options) => {
        if (args.includes('clone') || args.includes('fetch')) await new Promise((resolve) => setTimeout(resolve, 150));
        return run(args, options);
      };
      const upstreams = Array.from({ length: 12 }, () => Upstream.create());
      const names: string[] = [];
      for (const [i, upstream] of upstreams.entries()) names.push((await app.replication.addSource({ url: upstream.bare, name: `wiped-${i}` })).name);
      await app.startService();
      await eventually('a few sources to sync', async () => (await app.replication.listSources({ state: 'synced' })).length >= 2);
      expect((await app.kernel.jobs.load('sync')).queued).toBeGreaterThan(0);

      // Every queued job goes with the data; only the registry remembers what is pending.
      await redis.flushdb();
      expect((await app.replication.listSources({ state: 'synced' })).length).toBeLessThan(names.length);

      for (const [i, name] of names.entries()) {
        const synced = await eventually(
          `${name} to converge`,
          async () => {
            const current = await app.replication.getSource(name);
            return current.registry.state === 'synced' && current.registry.completedSeq >= current.registry.requestedSeq ? current : null;
          },
          60_000,
        );
        expect(refsOf(synced.registry.mirrorPath!)).toBe(refsOf(upstreams[i]!.bare));
      }
    } finally {
      await app.close();
      await redis.quit();
    }
  });
});
