// What ForgesyncShardDown watches: the shards' gauges read from the shared `shards` table at
// scrape time (any process reports a shard whose workers stopped), on each registry dialect;
// and a worker's internal endpoint serving the same registry on /metrics, behind the cluster token.
import { Gauge, Registry } from 'prom-client';
import { afterEach, describe, expect, it } from 'vitest';
import { startInternalServer } from '../../src/cluster/internal-server.js';
import { shardMetrics } from '../../src/cluster/metrics.js';
import { ShardRepository } from '../../src/cluster/store/shards.js';
import { createLogger } from '../../src/logging/logger.js';
import type { Database } from '../../src/store/database.js';
import { ServerPaths } from '../../src/util/server-paths.js';
import { postgresBackend, sqliteBackend, type StoreTarget } from '../store/backends.js';
import { testSecret } from '../support/secrets.js';

const DOWN_AFTER_MS = 10_000;

/** Waits out the 100 ms for which one read of the shards serves both gauges (one scrape's worth). */
const pastSharedRead = () => new Promise((resolve) => setTimeout(resolve, 150));

for (const backend of [sqliteBackend, postgresBackend]) {
  describe(`shard gauges (${backend.name})`, () => {
    let target: StoreTarget | undefined;
    let database: Database | undefined;
    afterEach(async () => {
      await database?.close();
      await target?.dispose();
      database = target = undefined;
    });

    it('reports a shard beating lately as up and a silent one as down, with its heartbeat age', async () => {
      target = await backend.fresh();
      database = await target.open();
      const shards = new ShardRepository(database.db, DOWN_AFTER_MS);
      const registry = new Registry();
      shardMetrics(registry, shards);
      expect(await registry.metrics()).not.toMatch(/^forgesync_shard_up\{/m);
      await pastSharedRead();

      const now = Date.now();
      await shards.register({ id: 'live', node: 'host-a:1', dataDir: '/srv/a' }, now);
      await shards.register({ id: 'silent', node: 'host-b:2', dataDir: '/srv/b' }, now - 60_000);
      await shards.register({ id: 'draining', node: 'host-c:3', dataDir: '/srv/c' }, now);
      expect(await shards.drain('draining')).toEqual([]); // draining: its worker still syncs and answers

      const text = await registry.metrics();
      expect(text).toMatch(/^forgesync_shard_up\{shard="live"\} 1$/m);
      expect(text).toMatch(/^forgesync_shard_up\{shard="silent"\} 0$/m);
      expect(text).toMatch(/^forgesync_shard_up\{shard="draining"\} 1$/m);
      const age = (shard: string) => Number(new RegExp(`^forgesync_shard_heartbeat_age_seconds\\{shard="${shard}"\\} (\\S+)$`, 'm').exec(text)?.[1]);
      expect(age('silent')).toBeGreaterThanOrEqual(60);
      expect(age('silent')).toBeLessThan(120);
      expect(age('live')).toBeLessThan(DOWN_AFTER_MS / 1000);

      // A beat brings it back.
      await shards.heartbeat({ id: 'silent', bytes: 0, worker: { node: 'host-b:2' } });
      await pastSharedRead();
      expect(await registry.metrics()).toMatch(/^forgesync_shard_up\{shard="silent"\} 1$/m);
    });
  });
}

describe("a worker's internal endpoint serves /metrics", () => {
  it('with the cluster token only', async () => {
    const token = testSecret('CLUSTER_TOKEN');
    const registry = new Registry();
    const server = await startInternalServer({
      token,
      listen: '127.0.0.1:0',
      logger: createLogger({ level: 'silent' }),
      serverPaths: new ServerPaths([]),
      metrics: registry,
      routes: async () => {},
    });
    try {
      new Gauge({ name: 'forgesync_test_worker_gauge', help: 'A gauge of this test.', registers: [registry] }).set(7);
      const refused = await fetch(`${server.url}/metrics`);
      expect(refused.status).toBe(401);
      const scraped = await fetch(`${server.url}/metrics`, { headers: { authorization: `Bearer ${token}` } });
      expect(scraped.status).toBe(200);
      expect(scraped.headers.get('content-type')).toContain('text/plain');
      expect(await scraped.text()).toMatch(/^forgesync_test_worker_gauge 7$/m);
    } finally {
      await server.close();
    }
  });
});
