import { Counter, Gauge, type Registry } from 'prom-client';

/** The pack cache's metrics (registered by a serving process only, when the cache is on). */
export interface PackCacheMetrics {
  lookups: Counter<'result'>;
  servedBytes: Counter;
  generatedBytes: Counter;
  evictions: Counter<'reason'>;
  failures: Counter;
}

/** Registers the pack cache's metrics on `registry`; `bytesOnDisk` is read on each scrape. */
export function packCacheMetrics(registry: Registry, bytesOnDisk: () => number): PackCacheMetrics {
  new Gauge({
    name: 'forgesync_pack_cache_bytes',
    help: 'Bytes of the pack cache on disk (entries kept and being generated).',
    registers: [registry],
    collect() {
      this.set(bytesOnDisk());
    },
  });
  return {
    lookups: new Counter({
      name: 'forgesync_pack_cache_lookups_total',
      help: 'Fetches whose pack was looked up in the cache: hit (an entry kept or being generated answered it) or miss (a pack-objects was started for it).',
      labelNames: ['result'] as const,
      registers: [registry],
    }),
    servedBytes: new Counter({
      name: 'forgesync_pack_cache_served_bytes_total',
      help: 'Pack bytes sent to fetches from the cache (hits), without running pack-objects for them.',
      registers: [registry],
    }),
    generatedBytes: new Counter({
      name: 'forgesync_pack_cache_generated_bytes_total',
      help: 'Pack bytes written by the cache\'s pack-objects runs (misses).',
      registers: [registry],
    }),
    evictions: new Counter({
      name: 'forgesync_pack_cache_evictions_total',
      help: 'Entries dropped from the pack cache, by reason: size (over FORGESYNC_PACK_CACHE_MAX_BYTES), ttl (older than FORGESYNC_PACK_CACHE_TTL), refs (the repository\'s refs moved).',
      labelNames: ['reason'] as const,
      registers: [registry],
    }),
    failures: new Counter({
      name: 'forgesync_pack_cache_failures_total',
      help: 'Pack generations that failed (pack-objects exited non-zero or was killed, the disk failed); their fetches failed, nothing was kept.',
      registers: [registry],
    }),
  };
}
