import { duration, integer, parseSize, setting } from '../config/setting.js';

/** Settings of Git LFS replication: how large an object may be, how many download at once, and for how long. */
export const lfsSettings = {
  lfsMaxObjectBytes: setting({
    key: 'lfsMaxObjectBytes',
    env: 'FORGESYNC_LFS_MAX_OBJECT_BYTES',
    default: '5GiB',
    doc: 'Largest Git LFS object replicated (`500MiB`, `2GB`, plain bytes): a pointer naming a bigger one is listed as failed without a download, and a download is cut off at this size.',
    parse: parseSize,
  }),
  lfsConcurrency: setting({
    key: 'lfsConcurrency',
    env: 'FORGESYNC_LFS_CONCURRENCY',
    default: '4',
    doc: "Git LFS objects one source's sync downloads at once (after the sync, under the source's lease).",
    parse: integer(1, 64),
  }),
  lfsTimeoutMs: setting({
    key: 'lfsTimeout',
    env: 'FORGESYNC_LFS_TIMEOUT',
    default: '30m',
    doc: "Time limit of one Git LFS request to the upstream: a batch request, or one object's download.",
    parse: duration(1000, 86_400_000),
  }),
};
