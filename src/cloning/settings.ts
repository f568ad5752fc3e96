import { duration, parseSize, setting } from '../config/setting.js';

/** Settings of the cloning module: the pack cache that serves identical fetches (CI fan-outs) from one pack-objects run. */
export const cloningSettings = {
  packCacheMaxBytes: setting({
    key: 'packCacheMaxBytes',
    env: 'FORGESYNC_PACK_CACHE_MAX_BYTES',
    default: '2GiB',
    doc:
      'Disk the pack cache of a serving process may use (`<dataDir>/pack-cache/`; `500MiB`, `20GB`, plain bytes), the least ' +
      'recently used packs evicted beyond it; `0` turns the cache off (every fetch runs its own pack-objects).',
    parse: parseSize,
  }),
  packCacheTtlMs: setting({
    key: 'packCacheTtl',
    env: 'FORGESYNC_PACK_CACHE_TTL',
    default: '5m',
    doc: 'How long a pack stays in the pack cache after it was generated (packs of a repository are dropped sooner when its refs move).',
    parse: duration(1000, 7 * 86_400_000),
  }),
};
