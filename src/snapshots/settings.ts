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
    doc:
      'Total size of snapshots kept on disk (`500MiB`, `20GB`, plain bytes): beyond it unheld ones are evicted, and a request ' +
      'that would make the held ones exceed it is refused (409).',
    parse: parseSize,
  }),
  snapshotHoldMs: setting({
    key: 'snapshotHold',
    env: 'FORGESYNC_SNAPSHOT_HOLD',
    default: '1h',
    doc: 'How long a snapshot made by the CLI or the API is protected from eviction unless released.',
    parse: duration(1000),
  }),
  // 24 h: an analysis job that runs overnight fits in one hold, while holds made with a
  // leaked or careless read token lapse within a day (they used to last up to 7 days).
  snapshotApiMaxHoldMs: setting({
    key: 'snapshotApiMaxHold',
    env: 'FORGESYNC_SNAPSHOT_API_MAX_HOLD',
    default: '24h',
    doc:
      'Longest hold an API caller may ask for (`holdMs`; longer is refused with 400); API snapshots without `holdMs` are held ' +
      '`snapshotHold` capped by it. The CLI\'s `--hold` is not capped.',
    parse: duration(1000),
  }),
};
