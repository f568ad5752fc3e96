import { Counter, Gauge, Histogram, type Registry } from 'prom-client';
import type { RegistryCounts, SyncLag } from './store/registry.js';
import { scrapeRead } from '../util/scrape-read.js';

/**
 * The replication module's Prometheus metrics. Labels are all bounded
 * (results, triggers, states, providers), never a repository name.
 */
export function replicationMetrics(registry: Registry, counts: () => Promise<RegistryCounts>) {
  const read = scrapeRead(counts);
  new Gauge({
    name: 'forgesync_registry_sources',
    help: 'Registry rows by state (and verified / mismatch / missing totals).',
    labelNames: ['state'] as const,
    registers: [registry],
    async collect() {
      for (const [state, value] of Object.entries((await read()) ?? {})) this.set({ state }, value);
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

/**
 * How far behind their interval the sources are, read from the registry on
 * each scrape (RegistryRepository.lag: one aggregate query, whose answer
 * serves both gauges of a scrape).
 */
export function syncLagMetrics(registry: Registry, lag: () => Promise<SyncLag>): void {
  const read = scrapeRead(lag);
  new Gauge({
    name: 'forgesync_sources_overdue',
    help: 'Enabled sources scheduled by interval (cron sources and those whose upstream is gone apart) whose last successful sync is older than twice their interval, or that were never synced though added that long ago.',
    registers: [registry],
    async collect() {
      const lag = await read();
      if (lag) this.set(lag.overdue);
    },
  });
  new Gauge({
    name: 'forgesync_sync_oldest_success_age_seconds',
    help: 'Age of the oldest last successful sync among the same sources (never synced: time since added); 0 when there are none.',
    registers: [registry],
    async collect() {
      const lag = await read();
      if (lag) this.set(lag.oldestSuccessAgeMs / 1000);
    },
  });
}

/**
 * Housekeeping's metrics (see replication/housekeeping.ts): runs and their
 * durations by task, and the loose objects, packs and loose refs of every
 * measured mirror summed from the reports (no per-source label).
 */
export function housekeepingMetrics(registry: Registry, totals: () => Promise<{ looseObjects: number; packs: number; looseRefs: number }>) {
  const read = scrapeRead(totals);
  new Gauge({
    name: 'forgesync_mirror_objects',
    help: 'Loose objects, packs and loose refs of all mirrors, as housekeeping last measured them (kind: loose_objects, packs, loose_refs).',
    labelNames: ['kind'] as const,
    registers: [registry],
    async collect() {
      const sums = await read();
      if (!sums) return;
      this.set({ kind: 'loose_objects' }, sums.looseObjects);
      this.set({ kind: 'packs' }, sums.packs);
      this.set({ kind: 'loose_refs' }, sums.looseRefs);
    },
  });
  return {
    runs: new Counter({
      name: 'forgesync_housekeeping_runs_total',
      help: 'Housekeeping tasks run on mirrors, by task (full-repack, geometric-repack, pack-refs, commit-graph) and result (done, failed).',
      labelNames: ['task', 'result'] as const,
      registers: [registry],
    }),
    duration: new Histogram({
      name: 'forgesync_housekeeping_duration_seconds',
      help: 'Duration of housekeeping tasks, by task.',
      labelNames: ['task'] as const,
      buckets: [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 1800],
      registers: [registry],
    }),
    checks: new Counter({
      name: 'forgesync_housekeeping_checks_total',
      help: 'Looks at a mirror after a sync, by outcome: tidy (nothing due) or ran (tasks ran).',
      labelNames: ['outcome'] as const,
      registers: [registry],
    }),
  };
}

export type HousekeepingMetrics = ReturnType<typeof housekeepingMetrics>;
