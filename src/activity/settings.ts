import { duration, setting } from '../config/setting.js';

/** Settings of the activity module: how often the rollup samples the metrics, and how long its rows are kept. */
export const activitySettings = {
  activitySampleIntervalMs: setting({
    key: 'activitySampleInterval',
    env: 'FORGESYNC_ACTIVITY_SAMPLE_INTERVAL',
    default: '1m',
    doc:
      'How often each process adds what its metrics counted since the last time to the activity rollup (the dashboard\'s ' +
      'Activity charts); a restart loses at most this much. From 1s to 5m.',
    parse: duration(1000, 300_000),
  }),
  activityMinutesKeptMs: setting({
    key: 'activityMinutesKept',
    env: 'FORGESYNC_ACTIVITY_MINUTES_KEPT',
    default: '24h',
    doc: 'How long the activity rollup keeps per-minute rows before folding them into per-hour rows. From 1h to 7d.',
    parse: duration(3_600_000, 7 * 86_400_000),
  }),
  activityHoursKeptMs: setting({
    key: 'activityHoursKept',
    env: 'FORGESYNC_ACTIVITY_HOURS_KEPT',
    default: '31d',
    doc: 'How long the activity rollup keeps per-hour rows; older ones are deleted. From 1d to 400d.',
    parse: duration(86_400_000, 400 * 86_400_000),
  }),
};
