import type { Logger } from '../logging/logger.js';
import { urlScheme } from '../leases/open.js';
import { UnsupportedJobsUrlError } from './errors.js';
import { InProcessTransport } from './in-process.js';
import type { JobTransport } from './types.js';

export interface JobTransportOptions {
  logger: Logger;
  /**
   * BullMQ only: how long a worker's hold on a running job lasts without being renewed
   * (it renews every half of it), i.e. how soon a job of a worker that died is run by another
   * worker. Default 15000 ms.
   */
  lockMs?: number;
  /** Shared transports: the storage shard this process's workers serve (jobs of sharded kinds for other shards are left to theirs). */
  shard?: string;
}

type TransportFactory = (url: string, options: JobTransportOptions) => Promise<JobTransport>;

// Imported only when their scheme is used: an embedded deployment never loads BullMQ.
const TRANSPORTS: Record<string, () => Promise<TransportFactory>> = {
  redis: async () => (await import('./bullmq/transport.js')).openBullmqTransport,
  rediss: async () => (await import('./bullmq/transport.js')).openBullmqTransport,
};

/**
 * Opens the job transport FORGESYNC_JOBS_URL names: unset or empty, the
 * in-process transport; `redis://[user:pass@]host:port[/db][?prefix=NAME]` (or
 * `rediss://`), BullMQ on that Redis, its keys under NAME (default `forgesync-jobs`).
 * Rejects with UnsupportedJobsUrlError for anything else, and with
 * JobBackendUnavailableError when that Redis cannot be used.
 */
export async function openJobTransport(url: string | undefined, options: JobTransportOptions): Promise<JobTransport> {
  if (url === undefined || url.trim() === '') return new InProcessTransport({ logger: options.logger });
  const scheme = urlScheme(url);
  const load = scheme ? TRANSPORTS[scheme] : undefined;
  if (!load) {
    throw new UnsupportedJobsUrlError(
      `jobs URL scheme "${scheme ?? url.slice(0, 20)}" is not supported; leave FORGESYNC_JOBS_URL unset for in-process jobs, or use redis:// or rediss:// for BullMQ`,
    );
  }
  return (await load())(url, options);
}
