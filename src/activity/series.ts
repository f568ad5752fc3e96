/*
 * The series the activity rollup keeps: a declared list of this process's
 * Prometheus metrics and the labels kept of each (the others are summed
 * away), so that the table stays small whatever the registry holds.
 * Every label kept here is bounded (results, providers): never a source,
 * a feed or an import name.
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

/**
 * The most series the list above can make: a bound on the rows of one
 * minute or hour. Results and operations are few (syncs 5, webhooks 6,
 * import requests 7, feed operations 2, cache lookups 2); the histogram
 * has 12 buckets, +Inf, its sum and count.
 */
export const MAX_SERIES = 64;
