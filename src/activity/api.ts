import type { Activity } from './activity.js';

/** What the rest of forgesync may ask of the activity module (documented in activity.ts). */
export type ActivityApi = Pick<Activity, 'series' | 'failures' | 'resyncGroup'>;

export type { ActivityRange, ActivitySeries } from './activity.js';
export type { FailureGroup } from './failure-groups.js';
