import { Gauge, type Registry } from 'prom-client';
import type { ShardRepository } from './store/shards.js';
import { scrapeRead } from '../util/scrape-read.js';

/**
 * The storage shards as every process sees them in the shared database
 * (the `shards` table), read on each scrape: any api process reports a
 * shard whose workers stopped, where the scrape of the dead worker itself
 * would only say that this one target is gone. Labels: the shard ids
 * (operator-chosen, a handful).
 */
export function shardMetrics(registry: Registry, shards: Pick<ShardRepository, 'health'>): void {
  // One read serves both gauges of a scrape.
  const read = scrapeRead(() => shards.health());
  new Gauge({
    name: 'forgesync_shard_up',
    help: 'Whether a storage shard has a live worker: 1 when one heartbeat it lately (active or draining), 0 when it is down (no heartbeat for 2 × FORGESYNC_LEASE_TTL).',
    labelNames: ['shard'] as const,
    registers: [registry],
    async collect() {
      this.reset();
      for (const shard of (await read()) ?? []) this.set({ shard: shard.id }, shard.state === 'down' ? 0 : 1);
    },
  });
  new Gauge({
    name: 'forgesync_shard_heartbeat_age_seconds',
    help: 'Seconds since a worker of the storage shard last heartbeat it (workers beat every third of the lease ttl).',
    labelNames: ['shard'] as const,
    registers: [registry],
    async collect() {
      this.reset();
      for (const shard of (await read()) ?? []) this.set({ shard: shard.id }, shard.heartbeatAgeMs / 1000);
    },
  });
}
