import { Gauge, type Registry } from 'prom-client';

/**
 * forgesync_ready: the checks of /readyz (the database and the lease
 * backend answer), run at each scrape, so the gauge and the endpoint always
 * agree. Every process has it, a worker-only one on its internal /metrics
 * too: workers hold most of the leases.
 */
export function readinessMetric(registry: Registry, readiness: () => Promise<Record<string, string>>): void {
  new Gauge({
    name: 'forgesync_ready',
    help: 'Whether /readyz would answer 200 now: 1 when the database and the lease backend answer, 0 when either fails (which one is in the not_ready log line of /readyz).',
    registers: [registry],
    async collect() {
      const checks = await readiness();
      this.set(Object.values(checks).every((result) => result === 'ok') ? 1 : 0);
    },
  });
}
