/*
 * The series the activity rollup keeps: a declared list of this process's
 * Prometheus metrics and the labels kept of each (the others are summed
 * away), so that the table stays small whatever the registry holds.
 * Every label kept here takes few values (results, operations): never a
 * source, a feed or an import name. Nothing caps the rows of a bucket:
 * the values the metrics use today make a few dozen series (the histogram
 * 15 of them: 12 buckets, +Inf, sum and count), and a new label value in
 * the code adds one.
 */

/** How a metric's samples become rollup rows (see sampler.ts). */
export type SeriesKind =
  /** A Prometheus counter: the increase since the last sample is added. */
  | 'counter'
  /** A Prometheus histogram: the increase of each cumulative bucket, of the sum and of the count. */
  | 'histogram'
  /** A Prometheus gauge: its value is added (with a sample count, for the mean) and its peak kept. */
  | 'gauge';

export interface SeriesDeclaration {
  readonly metric: string;
  readonly kind: SeriesKind;
  /** The labels kept; samples differing only in other labels are summed. */
  readonly keep: readonly string[];
}

/** What the dashboard's charts draw (metric names from src/ ** /metrics.ts). */
export const ACTIVITY_SERIES: readonly SeriesDeclaration[] = [
  { metric: 'forgesync_syncs_total', kind: 'counter', keep: ['result'] },
  { metric: 'forgesync_sync_duration_seconds', kind: 'histogram', keep: [] },
  { metric: 'forgesync_webhooks_total', kind: 'counter', keep: ['result'] },
  { metric: 'forgesync_import_requests_total', kind: 'counter', keep: ['result'] },
  { metric: 'forgesync_import_rate_limit_wait_seconds_total', kind: 'counter', keep: [] },
  { metric: 'forgesync_feed_delivered_total', kind: 'counter', keep: ['operation'] },
  { metric: 'forgesync_feed_lag_changes', kind: 'gauge', keep: [] },
  { metric: 'forgesync_feed_dead_letters', kind: 'gauge', keep: [] },
  { metric: 'forgesync_pack_cache_served_bytes_total', kind: 'counter', keep: [] },
  { metric: 'forgesync_pack_cache_generated_bytes_total', kind: 'counter', keep: [] },
  { metric: 'forgesync_pack_cache_lookups_total', kind: 'counter', keep: ['result'] },
];
