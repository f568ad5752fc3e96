import type { RollupRow } from './store/rollup.js';

/*
 * The dashboard's charts made from rollup rows: one time axis (every
 * bucket of the range, empty ones included) and, per chart, series of one
 * value per bucket. Counters give their increase per bucket; the sync
 * duration gives percentiles from its histogram buckets (as Prometheus's
 * histogram_quantile does); gauges give their mean per bucket.
 */

export interface ChartSeries {
  label: string;
  /** One value per bucket; null where nothing was recorded (gauges, percentiles). */
  values: (number | null)[];
  /** Counters: the sum over the range; others: null. */
  total: number | null;
}

export interface Chart {
  id: string;
  title: string;
  unit: string;
  series: ChartSeries[];
}

/** Rows of one bucket by series key (`metric` + labels JSON). */
type Buckets = Map<number, Map<string, RollupRow>>;

const QUANTILES = [0.5, 0.9, 0.99];

/** The charts over `times` (bucket starts, epoch ms) from `rows`. */
export function buildCharts(times: readonly number[], rows: readonly RollupRow[]): Chart[] {
  const buckets: Buckets = new Map();
  for (const row of rows) {
    const bucket = buckets.get(row.bucketAt) ?? new Map<string, RollupRow>();
    bucket.set(`${row.metric}${row.labels}`, row);
    buckets.set(row.bucketAt, bucket);
  }
  const counter = (metric: string, label: string, value: string) => counterByLabel(times, rows, buckets, { metric, label, value });
  const gauge = (metric: string, label: string) => gaugeMean(times, buckets, { metric, label });
  const series: Record<string, ChartSeries[]> = {
    syncs: counter('forgesync_syncs_total', 'result', 'result'),
    duration: durationPercentiles(times, rows, buckets),
    webhooks: counter('forgesync_webhooks_total', 'result', 'result'),
    imports: [...counter('forgesync_import_requests_total', 'result', 'result'), ...counter('forgesync_import_rate_limit_wait_seconds_total', '', 'rate-limit wait (s)')],
    feeds: [...counter('forgesync_feed_delivered_total', 'operation', 'operation'), ...gauge('forgesync_feed_lag_changes', 'lag (changes)'), ...gauge('forgesync_feed_dead_letters', 'dead letters')],
    clones: [
      ...counter('forgesync_pack_cache_served_bytes_total', '', 'served from cache (bytes)'),
      ...counter('forgesync_pack_cache_generated_bytes_total', '', 'generated (bytes)'),
      ...counter('forgesync_pack_cache_lookups_total', 'result', 'result'),
    ],
  };
  return [
    { id: 'syncs', title: 'Syncs by result', unit: 'syncs', series: series.syncs! },
    { id: 'duration', title: 'Sync duration percentiles', unit: 's', series: series.duration! },
    { id: 'webhooks', title: 'Webhook deliveries by result', unit: 'deliveries', series: series.webhooks! },
    { id: 'imports', title: 'Import requests and rate-limit waits', unit: 'requests', series: series.imports! },
    { id: 'feeds', title: 'Feed deliveries and lag', unit: 'events', series: series.feeds! },
    { id: 'clones', title: 'Clone traffic (pack cache)', unit: 'bytes', series: series.clones! },
  ];
}

/**
 * One series per value of `label` (or one series named `value` when the
 * label is ''), each the counter's increase per bucket.
 */
function counterByLabel(times: readonly number[], rows: readonly RollupRow[], buckets: Buckets, which: { metric: string; label: string; value: string }): ChartSeries[] {
  const labelSets = [...new Set(rows.filter((row) => row.metric === which.metric).map((row) => row.labels))].sort();
  return labelSets.map((labels) => {
    const values = times.map((time) => buckets.get(time)?.get(`${which.metric}${labels}`)?.total ?? 0);
    const name = which.label === '' ? which.value : (JSON.parse(labels) as Record<string, string>)[which.label] ?? 'other';
    return { label: name, values, total: values.reduce((sum, value) => sum + value, 0) };
  });
}

/** The gauge's mean per bucket; no series when it was never sampled in the range (no feed, say). */
function gaugeMean(times: readonly number[], buckets: Buckets, which: { metric: string; label: string }): ChartSeries[] {
  const values = times.map((time) => {
    const row = buckets.get(time)?.get(`${which.metric}{}`);
    return row && row.samples > 0 ? row.total / row.samples : null;
  });
  return values.some((value) => value !== null) ? [{ label: which.label, values, total: null }] : [];
}

function durationPercentiles(times: readonly number[], rows: readonly RollupRow[], buckets: Buckets): ChartSeries[] {
  const metric = 'forgesync_sync_duration_seconds_bucket';
  const bounds = [...new Set(rows.filter((row) => row.metric === metric).map((row) => (JSON.parse(row.labels) as { le: string }).le))]
    .map((le) => ({ le, upper: le === '+Inf' ? Number.POSITIVE_INFINITY : Number(le) }))
    .sort((a, b) => a.upper - b.upper);
  return QUANTILES.map((q) => ({
    label: `p${Math.round(q * 100)}`,
    values: times.map((time) => {
      const cumulative = bounds.map(({ le, upper }) => ({ upper, count: buckets.get(time)?.get(`${metric}${JSON.stringify({ le })}`)?.total ?? 0 }));
      return quantile(q, cumulative);
    }),
    total: null,
  }));
}

/** The q-quantile of cumulative histogram buckets, interpolated within its bucket; null without observations. */
export function quantile(q: number, buckets: readonly { upper: number; count: number }[]): number | null {
  const observed = buckets.at(-1)?.count ?? 0;
  if (observed <= 0) return null;
  const rank = q * observed;
  let lowerBound = 0;
  let lowerCount = 0;
  for (const { upper, count } of buckets) {
    if (count >= rank) {
      // Above the last finite bound Prometheus answers that bound: nothing says how far above.
      if (!Number.isFinite(upper)) return lowerBound;
      return lowerBound + ((upper - lowerBound) * (rank - lowerCount)) / Math.max(count - lowerCount, Number.EPSILON);
    }
    lowerBound = upper;
    lowerCount = count;
  }
  return lowerBound;
}
