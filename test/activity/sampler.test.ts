import { Counter, Gauge, Histogram, Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { mergeDeltas, RegistrySampler, type SeriesDelta } from '../../src/activity/sampler.js';
import { ACTIVITY_SERIES, type SeriesDeclaration } from '../../src/activity/series.js';

/** Metrics named and labelled as replication's (src/replication/metrics.ts), on `registry`. */
function syncMetrics(registry: Registry) {
  return {
    syncs: new Counter({ name: 'forgesync_syncs_total', help: 'h', labelNames: ['result', 'trigger'], registers: [registry] }),
    syncDuration: new Histogram({ name: 'forgesync_sync_duration_seconds', help: 'h', buckets: [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900], registers: [registry] }),
    webhooks: new Counter({ name: 'forgesync_webhooks_total', help: 'h', labelNames: ['provider', 'result'], registers: [registry] }),
  };
}

/** The deltas as `metric labels → total/peak/samples`, for readable expectations. */
const shown = (deltas: SeriesDelta[]) => Object.fromEntries(deltas.map((d) => [`${d.metric} ${d.labels}`, [d.total, d.peak, d.samples]]));

describe('the activity sampler over a real prom-client registry', () => {
  it('turns counters into increases by kept label, summing the labels it drops, and skips series with nothing new', async () => {
    const registry = new Registry();
    const metrics = syncMetrics(registry);
    const sampler = new RegistrySampler(registry, ACTIVITY_SERIES);
    metrics.syncs.inc({ result: 'synced', trigger: 'schedule' }, 2);
    metrics.syncs.inc({ result: 'synced', trigger: 'webhook' });
    metrics.syncs.inc({ result: 'failed', trigger: 'manual' });
    metrics.webhooks.inc({ provider: 'github', result: 'accepted' });
    const first = shown(await sampler.sample());
    expect(first['forgesync_syncs_total {"result":"synced"}']).toEqual([3, 0, 0]);
    expect(first['forgesync_syncs_total {"result":"failed"}']).toEqual([1, 0, 0]);
    expect(first['forgesync_webhooks_total {"result":"accepted"}']).toEqual([1, 0, 0]);

    metrics.syncs.inc({ result: 'synced', trigger: 'cli' }, 4);
    const second = shown(await sampler.sample());
    expect(second).toEqual({ 'forgesync_syncs_total {"result":"synced"}': [4, 0, 0] });
    expect(await sampler.sample()).toEqual([]);
  });

  it('gives the increase of each histogram bucket, of its sum and its count', async () => {
    const registry = new Registry();
    const metrics = syncMetrics(registry);
    const sampler = new RegistrySampler(registry, ACTIVITY_SERIES);
    metrics.syncDuration.observe(0.3);
    await sampler.sample();
    metrics.syncDuration.observe(0.07);
    metrics.syncDuration.observe(20);
    const deltas = shown(await sampler.sample());
    expect(deltas['forgesync_sync_duration_seconds_bucket {"le":"0.1"}']).toEqual([1, 0, 0]);
    expect(deltas['forgesync_sync_duration_seconds_bucket {"le":"0.5"}']).toEqual([1, 0, 0]);
    expect(deltas['forgesync_sync_duration_seconds_bucket {"le":"30"}']).toEqual([2, 0, 0]);
    expect(deltas['forgesync_sync_duration_seconds_bucket {"le":"+Inf"}']).toEqual([2, 0, 0]);
    expect(deltas['forgesync_sync_duration_seconds_count {}']).toEqual([2, 0, 0]);
    expect(deltas['forgesync_sync_duration_seconds_sum {}']![0]).toBeCloseTo(20.07);
    // The 0.05 bucket saw nothing new: no row for it.
    expect(deltas['forgesync_sync_duration_seconds_bucket {"le":"0.05"}']).toBeUndefined();
  });

  it('reads gauges (their collect functions too) as a value with one sample, and takes a reset counter as counting from zero', async () => {
    const registry = new Registry();
    const declared: SeriesDeclaration[] = [
      { metric: 'lag', kind: 'gauge', keep: [] },
      { metric: 'hits_total', kind: 'counter', keep: [] },
      { metric: 'never_registered_total', kind: 'counter', keep: [] },
    ];
    let feeds = [3, 4];
    new Gauge({ name: 'lag', help: 'h', labelNames: ['feed'], registers: [registry], collect() { this.reset(); feeds.forEach((value, index) => this.set({ feed: `f${index}` }, value)); } });
    const hits = new Counter({ name: 'hits_total', help: 'h', registers: [registry] });
    new Histogram({ name: 'unrelated_seconds', help: 'h', registers: [registry] }).observe(1);
    const sampler = new RegistrySampler(registry, declared);
    hits.inc(10);
    expect(shown(await sampler.sample())).toEqual({ 'lag {}': [7, 7, 1], 'hits_total {}': [10, 0, 0] });
    feeds = [1];
    hits.reset();
    hits.inc(2);
    expect(shown(await sampler.sample())).toEqual({ 'lag {}': [1, 1, 1], 'hits_total {}': [2, 0, 0] });
  });

  it('merges a sample the database did not take into the next one: counts add, gauges keep their samples and highest peak', () => {
    const counter = (total: number): SeriesDelta => ({ metric: 'forgesync_syncs_total', labels: '{"result":"synced"}', total, peak: 0, samples: 0 });
    const gauge = (value: number): SeriesDelta => ({ metric: 'forgesync_feed_lag_changes', labels: '{}', total: value, peak: value, samples: 1 });
    expect(shown(mergeDeltas([counter(2), gauge(9)], [counter(3), gauge(4)]))).toEqual({
      'forgesync_syncs_total {"result":"synced"}': [5, 0, 0],
      'forgesync_feed_lag_changes {}': [13, 9, 2],
    });
    expect(mergeDeltas([], [counter(1)])).toEqual([counter(1)]);
  });
});
