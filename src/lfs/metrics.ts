import { Counter, type Registry } from 'prom-client';

/** The lfs module's Prometheus metrics (bounded labels: outcomes only, never a repository or an oid). */
export function lfsMetrics(registry: Registry) {
  return {
    objects: new Counter({
      name: 'forgesync_lfs_objects_total',
      help: 'LFS objects a sync followed up, by outcome: stored (downloaded), shared (stored already for another source), missing (gone upstream), failed (retried after the next sync), refused (over the size cap).',
      labelNames: ['outcome'] as const,
      registers: [registry],
    }),
    downloadedBytes: new Counter({
      name: 'forgesync_lfs_downloaded_bytes_total',
      help: 'Bytes of LFS objects downloaded from upstreams and stored.',
      registers: [registry],
    }),
  };
}

export type LfsMetrics = ReturnType<typeof lfsMetrics>;
