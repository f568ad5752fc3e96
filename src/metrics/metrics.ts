import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import type { RegistryCounts } from '../store/registry.js';

/**
 * forgesync's Prometheus metrics, on a registry of their own (so several
 * instances in one process, as in tests, never collide). Labels are all
 * bounded: results, triggers, states, providers — never a repository name.
 */
export class Metrics {
  readonly registry = new Registry();
  readonly syncs = new Counter({
    name: 'forgesync_syncs_total',
    help: 'Sync attempts by result and trigger.',
    labelNames: ['result', 'trigger'] as const,
    registers: [this.registry],
  });
  readonly syncDuration = new Histogram({
    name: 'forgesync_sync_duration_seconds',
    help: 'Duration of sync attempts.',
    buckets: [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900],
    registers: [this.registry],
  });
  readonly leaseSkips = new Counter({
    name: 'forgesync_lease_skips_total',
    help: 'Work skipped because another holder had the lease.',
    registers: [this.registry],
  });
  readonly webhooks = new Counter({
    name: 'forgesync_webhooks_total',
    help: 'Webhook deliveries by provider and result.',
    labelNames: ['provider', 'result'] as const,
    registers: [this.registry],
  });

  constructor(counts: () => Promise<RegistryCounts>) {
    new Gauge({
      name: 'forgesync_registry_sources',
      help: 'Registry rows by state (and verified / mismatch / missing totals).',
      labelNames: ['state'] as const,
      registers: [this.registry],
      async collect() {
        const current = await counts();
        for (const [state, value] of Object.entries(current)) this.set({ state }, value);
      },
    });
    collectDefaultMetrics({ register: this.registry, prefix: 'forgesync_' });
  }
}
