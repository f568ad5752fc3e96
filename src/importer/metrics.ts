import { Counter, Gauge, Histogram, type Registry } from 'prom-client';
import type { ImportRecord } from './store/imports.js';
import { STAGES } from './types.js';
import { scrapeRead } from '../util/scrape-read.js';

export interface ImporterMetrics {
  objects: Counter<'type' | 'kind'>;
  requests: Counter<'result'>;
  rateLimitWait: Counter;
  refreshes: Counter<'result'>;
  refreshLag: Histogram;
}

/** The importer's metrics; `forgesync_import_stage` is read from the registry on each scrape. */
export function importerMetrics(registry: Registry, list: () => Promise<ImportRecord[]>): ImporterMetrics {
  const read = scrapeRead(list);
  const objects = new Counter({
    name: 'forgesync_import_objects_total',
    help: 'Objects fetched from GitHub and imported, by object type.',
    labelNames: ['type', 'kind'] as const,
    registers: [registry],
  });
  const requests = new Counter({
    name: 'forgesync_import_requests_total',
    help: 'Answers to GitHub API requests, by result (ok, not_modified, rate_limited, secondary_limited, server_error, network_error, client_error).',
    labelNames: ['result'] as const,
    registers: [registry],
  });
  const rateLimitWait = new Counter({
    name: 'forgesync_import_rate_limit_wait_seconds_total',
    help: 'Time imports waited for a rate limit to reset or a retry-after to pass.',
    registers: [registry],
  });
  const refreshes = new Counter({
    name: 'forgesync_import_refreshes_total',
    help: 'Objects webhooks named, fetched again, by result (stored, deleted, sync: a list read again by a sync, failed).',
    labelNames: ['result'] as const,
    registers: [registry],
  });
  const refreshLag = new Histogram({
    name: 'forgesync_import_refresh_lag_seconds',
    help: 'Time from the first webhook delivery naming an object to the copy storing what the API answered for it.',
    buckets: [0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60, 300],
    registers: [registry],
  });
  new Gauge({
    name: 'forgesync_import_stage',
    help: 'The stage each import is at, as its index in the stage order (0 = repository … 10 = finish), labelled with the stage and state.',
    labelNames: ['import', 'stage', 'state'] as const,
    registers: [registry],
    async collect() {
      this.reset();
      for (const record of (await read()) ?? []) this.set({ import: record.name, stage: record.stage, state: record.state }, STAGES.indexOf(record.stage));
    },
  });
  return { objects, requests, rateLimitWait, refreshes, refreshLag };
}
