import { Counter, type Registry } from 'prom-client';
import type { LeaseManager } from './manager.js';

/**
 * The lease manager's Prometheus counters, read from its incident counts at
 * each scrape (the manager itself knows nothing of Prometheus). Every label
 * value is exported from the start, at 0, so `increase()` sees the first
 * lease lost. `store` is the backend (sqlite, redis, postgres, mysql).
 */
export function leaseMetrics(registry: Registry, leases: Pick<LeaseManager, 'backend' | 'incidents'>): void {
  const store = leases.backend;
  new Counter({
    name: 'forgesync_lease_renewal_failures_total',
    help: 'Heartbeat renewals of held leases that failed with a backend error (retried sooner; the lease is lost if none gets through before its ttl).',
    labelNames: ['store'] as const,
    registers: [registry],
    collect() {
      this.reset();
      this.inc({ store }, leases.incidents.renewalFailures);
    },
  });
  new Counter({
    name: 'forgesync_leases_lost_total',
    help: 'Leases lost before their holder released them, by reason: expired (no renewal got through within the ttl) or taken (the backend says another holder has the key, or it was released by force).',
    labelNames: ['store', 'reason'] as const,
    registers: [registry],
    collect() {
      this.reset();
      for (const [reason, count] of Object.entries(leases.incidents.lost)) this.inc({ store, reason }, count);
    },
  });
}
