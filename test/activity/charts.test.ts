import { describe, expect, it } from 'vitest';
import { buildCharts, quantile } from '../../src/activity/charts.js';
import type { RollupRow } from '../../src/activity/store/rollup.js';

const MINUTE = 60_000;
const row = (bucketAt: number, metric: string, labels: object, total: number, extra: Partial<RollupRow> = {}): RollupRow => ({
  resolution: 'minute',
  bucketAt,
  metric,
  labels: JSON.stringify(labels),
  total,
  peak: 0,
  samples: 0,
  ...extra,
});

describe('the activity charts', () => {
  it('interpolates quantiles within cumulative buckets, as histogram_quantile does', () => {
    const buckets = [
      { upper: 1, count: 2 },
      { upper: 2, count: 6 },
      { upper: Number.POSITIVE_INFINITY, count: 8 },
    ];
    expect(quantile(0.5, buckets)).toBe(1.5); // rank 4: halfway through (1, 2]
    expect(quantile(0.25, buckets)).toBe(1); // rank 2: the top of the first bucket
    expect(quantile(0.99, buckets)).toBe(2); // in +Inf: the last finite bound
    expect(quantile(0.5, [{ upper: 1, count: 0 }])).toBeNull();
  });

  it('gives every bucket of the range a value: counters their increase (0 when none), gauges their mean, percentiles from buckets', () => {
    const times = [0, MINUTE, 2 * MINUTE];
    const charts = buildCharts(times, [
      row(0, 'forgesync_syncs_total', { result: 'synced' }, 3),
      row(2 * MINUTE, 'forgesync_syncs_total', { result: 'synced' }, 1),
      row(MINUTE, 'forgesync_syncs_total', { result: 'failed' }, 2),
      row(MINUTE, 'forgesync_feed_lag_changes', {}, 9, { peak: 6, samples: 2 }),
      row(MINUTE, 'forgesync_sync_duration_seconds_bucket', { le: '1' }, 1),
      row(MINUTE, 'forgesync_sync_duration_seconds_bucket', { le: '2' }, 3),
      row(MINUTE, 'forgesync_sync_duration_seconds_bucket', { le: '+Inf' }, 3),
    ]);
    const chart = (id: string) => charts.find((each) => each.id === id)!;
    expect(chart('syncs').series).toEqual([
      { label: 'failed', values: [0, 2, 0], total: 2 },
      { label: 'synced', values: [3, 0, 1], total: 4 },
    ]);
    // Dead letters were never sampled: no series for them.
    expect(chart('feeds').series).toEqual([{ label: 'lag (changes)', values: [null, 4.5, null], total: null }]);
    const p50 = chart('duration').series.find((series) => series.label === 'p50')!;
    expect(p50.values[0]).toBeNull();
    expect(p50.values[1]).toBeCloseTo(1.25);
    expect(chart('webhooks').series).toEqual([]);
  });
});
