import { duration, integer, parseSize, setting } from '../config/setting.js';

/** Settings of the snapshots module: the cache budget and how long CLI and API snapshots are held. */
export const snapshotSettings = {
  snapshotMaxCount: setting({
    key: 'snapshotMaxCount',
    env: 'FORGESYNC_SNAPSHOT_MAX_COUNT',
    default: '50',
    doc: 'Snapshots kept on disk before the least recently used unheld ones are evicted.',
    parse: integer(1),
  }),
  snapshotMaxBytes: setting({
    key: 'snapshotMaxBytes',
    env: 'FORGESYNC_SNAPSHOT_MAX_BYTES',
    default: '10GiB',
    doc: 'Total size of snapshots kept on disk before unheld ones are evicted (`500MiB`, `20GB`, plain bytes).',
    parse: parseSize,
  }),
  snapshotHoldMs: setting({
    key: 'snapshotHold',
    env: 'FORGESYNC_SNAPSHOT_HOLD',
    default: '1h',
    doc: 'How long a snapshot made by the CLI or the API is protected from eviction unless released.',
    parse: duration(1000),
  }),
};
