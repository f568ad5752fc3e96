import { Counter, Gauge, Histogram, type Registry } from 'prom-client';
import type { RegistryCounts } from './store/registry.js';

/**
 * The replication module's Prometheus metrics. Labels are all bounded
 * (results, triggers, states, providers), never a repository name.
 */
export function replicationMetrics(registry: Registry, counts: () => Promise<RegistryCounts>) {
  new Gauge({
    name: 'forgesync_registry_sources',
    help: 'Registry rows by state (and verified / mismatch / missing totals).',
    labelNames: ['state'] as const,
    registers: [registry],
    async collect() {
      for (const [state, value] of Object.entries(await counts())) this.set({ state }, value);
    },
  });
  return {
    syncs: new Counter({
      name: 'forgesync_syncs_total',
      help: 'Sync attempts by result and trigger.',
      labelNames: ['result', 'trigger'] as const,
      registers: [registry],
    }),
    syncDuration: new Histogram({
      name: 'forgesync_sync_duration_seconds',
      help: 'Duration of sync attempts.',
      buckets: [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900],
      registers: [registry],
    }),
    leaseSkips: new Counter({
      name: 'forgesync_lease_skips_total',
      help: 'Syncs skipped because another holder had the lease.',
      registers: [registry],
    }),
    webhooks: new Counter({
      name: 'forgesync_webhooks_total',
      help: 'Webhook deliveries by provider and result.',
      labelNames: ['provider', 'result'] as const,
      registers: [registry],
    }),
  };
}

export type ReplicationMetrics = ReturnType<typeof replicationMetrics>;
