import { describe, expect, it } from 'vitest';
import { queryProblems, readScrape } from './query-check.js';

/*
 * The check the dashboard and rules go through (queries.test.ts), on a small
 * hand-written scrape: it must flag a wrong metric or label, and pass what is
 * right, histogram suffixes and target labels included.
 */

const SCRAPE = readScrape(`# HELP forgesync_syncs_total Sync attempts by result and trigger.
# TYPE forgesync_syncs_total counter
forgesync_syncs_total{result="synced",trigger="schedule"} 3
forgesync_syncs_total{result="failed",trigger="webhook"} 1
# HELP forgesync_sync_duration_seconds Duration of sync attempts.
# TYPE forgesync_sync_duration_seconds histogram
forgesync_sync_duration_seconds_bucket{le="0.05"} 1
forgesync_sync_duration_seconds_bucket{le="+Inf"} 4
forgesync_sync_duration_seconds_sum 2.5
forgesync_sync_duration_seconds_count 4
# HELP forgesync_pack_cache_evictions_total Entries dropped.
# TYPE forgesync_pack_cache_evictions_total counter
# HELP forgesync_feed_lag_changes Lag.
# TYPE forgesync_feed_lag_changes gauge
forgesync_feed_lag_changes{feed="a \\"quoted\\", with comma"} 0
`);

describe('queryProblems', () => {
  it('passes metrics and labels the scrape has, histogram series and target labels included', () => {
    expect(queryProblems('sum by (result, instance) (rate(forgesync_syncs_total{trigger="webhook", job="forgesync"}[5m]))', SCRAPE)).toEqual([]);
    expect(queryProblems('histogram_quantile(0.9, sum by (le) (rate(forgesync_sync_duration_seconds_bucket[5m]))) / forgesync_sync_duration_seconds_count', SCRAPE)).toEqual([]);
    expect(queryProblems('max by (feed) (forgesync_feed_lag_changes)', SCRAPE)).toEqual([]);
    expect(queryProblems('sum(rate(forgesync_pack_cache_evictions_total[5m]))', SCRAPE)).toEqual([]);
  });

  it('flags a metric the scrape does not have, a suffix of a non-histogram among them', () => {
    expect(queryProblems('rate(forgesync_sync_total[5m])', SCRAPE)).toEqual(['no metric forgesync_sync_total in the scrape']);
    expect(queryProblems('forgesync_syncs_total_bucket', SCRAPE)).toEqual(['no metric forgesync_syncs_total_bucket in the scrape']);
  });

  it('flags a label the metric does not have, in a matcher or a grouping clause', () => {
    expect(queryProblems('forgesync_syncs_total{outcome="failed"}', SCRAPE)).toEqual(['forgesync_syncs_total has no label outcome']);
    expect(queryProblems('forgesync_sync_duration_seconds_count{le="1"}', SCRAPE)).toEqual(['forgesync_sync_duration_seconds_count has no label le']);
    expect(queryProblems('sum by (provider) (forgesync_syncs_total)', SCRAPE)).toEqual([expect.stringContaining('grouping label provider')]);
  });

  it('flags labels of a metric without samples, which the scrape cannot vouch for', () => {
    expect(queryProblems('forgesync_pack_cache_evictions_total{reason="ttl"}', SCRAPE)).toEqual([expect.stringContaining('no samples')]);
    expect(queryProblems('sum by (reason) (forgesync_pack_cache_evictions_total)', SCRAPE)).toEqual([expect.stringContaining('grouping label reason')]);
  });

  it('knows the series Prometheus makes, with its target labels only', () => {
    expect(queryProblems('up{job=~"forgesync|forgesync-workers"} == 0', SCRAPE)).toEqual([]);
    expect(queryProblems('max by (shard) (up{shard!=""}) == 0', SCRAPE)).toEqual(['up has no label shard', expect.stringContaining('grouping label shard')]);
    expect(queryProblems('probe_success == 0', SCRAPE)).toEqual(['no metric probe_success in the scrape']);
  });
});
