import type { Registry } from 'prom-client';
import type { SettingValues } from '../config/setting.js';
import type { Logger } from '../logging/logger.js';
import type { ReplicationApi } from '../replication/api.js';
import type { Database } from '../store/database.js';
import { buildCharts, type Chart } from './charts.js';
import { FailureGroupNotFoundError } from './errors.js';
import { failureGroupsOf, type FailureGroup } from './failure-groups.js';
import { mergeDeltas, RegistrySampler, type SeriesDelta } from './sampler.js';
import { ACTIVITY_SERIES } from './series.js';
import type { activitySettings } from './settings.js';
import { readFailures, recordFailures } from './store/failures.js';
import { addToRollup, foldMinutes, pruneHours, readMinutesByHour, readRollup, toHours } from './store/rollup.js';
import { activityDb, type ActivityDb, type Resolution } from './store/tables.js';

/** The ranges the charts show: the last hour and day in minutes, the last month in hours. */
export type ActivityRange = 'hour' | 'day' | 'month';

const MINUTE_MS = 60_000;
const HOUR_MS = 3_600_000;
const RANGES: Readonly<Record<ActivityRange, { resolution: Resolution; stepMs: number; buckets: number }>> = {
  hour: { resolution: 'minute', stepMs: MINUTE_MS, buckets: 60 },
  day: { resolution: 'minute', stepMs: MINUTE_MS, buckets: 1440 },
  month: { resolution: 'hour', stepMs: HOUR_MS, buckets: 31 * 24 },
};

/** What the charts' endpoint answers. */
export interface ActivitySeries {
  range: ActivityRange;
  resolution: Resolution;
  stepMs: number;
  /** Bucket starts, epoch ms, oldest first; every chart series has one value per bucket. */
  times: number[];
  charts: Chart[];
}

export interface ActivityOptions {
  database: Pick<Database, 'db' | 'dialect'>;
  metrics: Registry;
  logger: Logger;
  settings: SettingValues<typeof activitySettings>;
  sources: Pick<ReplicationApi, 'listSources' | 'requestSyncByIds'>;
  /** Whether this process runs jobs (a worker): then it samples, as a process serving HTTP or running the scheduler does. */
  runsJobs: () => boolean;
  now?: () => number;
}

/**
 * Activity over time: samples this process's metrics into the rollup
 * (per minute, folded into hours, pruned), answers the dashboard's charts
 * and groups the failing sources by their normalised error.
 */
export class Activity {
  readonly #db: ActivityDb;
  readonly #sampler: RegistrySampler;
  readonly #now: () => number;
  #timer: NodeJS.Timeout | undefined;
  #sampling: Promise<void> = Promise.resolve();
  #serving = false;
  /** Deltas sampled but not written (the database failed): added to the next sample's, so an outage loses no count. */
  #unwritten: SeriesDelta[] = [];
  /** The cutoffs of this process's last fold and prune (see #sample). */
  #folded: { foldTo: number; pruneTo: number } | undefined;

  constructor(private readonly options: ActivityOptions) {
    this.#db = activityDb(options.database);
    this.#sampler = new RegistrySampler(options.metrics, ACTIVITY_SERIES);
    this.#now = options.now ?? Date.now;
  }

  /**
   * Samples every `activitySampleInterval` from now on, in a process that
   * serves (see serving()) or runs jobs: a CLI command's process opens the
   * module too, and writes nothing.
   */
  startSampling(): void {
    if (this.#timer) return;
    this.#timer = setInterval(() => {
      if (this.#active()) void this.sampleNow();
    }, this.options.settings.activitySampleIntervalMs);
    this.#timer.unref();
  }

  /** This process serves HTTP or runs the scheduler: it samples (idempotent). */
  serving(): void {
    this.#serving = true;
  }

  #active(): boolean {
    return this.#serving || this.options.runsJobs();
  }

  /** Adds what the metrics counted since the last sample to this minute's rows, folds and prunes old rows, records failures. Never rejects. */
  sampleNow(): Promise<void> {
    // One at a time: a sample's deltas are taken from the previous one's.
    this.#sampling = this.#sampling.then(() => this.#sample().catch((error: unknown) => this.options.logger.warn({ event: 'activity_sample_failed', err: String(error) }, 'sampling the activity rollup failed')));
    return this.#sampling;
  }

  async #sample(): Promise<void> {
    const now = this.#now();
    this.#unwritten = mergeDeltas(this.#unwritten, await this.#sampler.sample());
    const { dialect } = this.options.database;
    await addToRollup(this.#db, dialect, 'minute', Math.floor(now / MINUTE_MS) * MINUTE_MS, this.#unwritten);
    this.#unwritten = [];
    const { activityMinutesKeptMs, activityHoursKeptMs } = this.options.settings;
    // Whole hours only: an hour row is made from all of its minutes at once. Rows start on the hour, so deleting those
    // before the cutoff is deleting those before the next hour from it: both cutoffs move once an hour, and a sample
    // in the same hour as the last fold has nothing to fold or prune.
    const cutoffs = { foldTo: Math.floor((now - activityMinutesKeptMs) / HOUR_MS) * HOUR_MS, pruneTo: Math.ceil((now - activityHoursKeptMs) / HOUR_MS) * HOUR_MS };
    if (cutoffs.foldTo !== this.#folded?.foldTo || cutoffs.pruneTo !== this.#folded.pruneTo) {
      await foldMinutes(this.#db, dialect, cutoffs.foldTo);
      await pruneHours(this.#db, cutoffs.pruneTo);
      this.#folded = cutoffs;
    }
    await this.#recordFailures();
  }

  /** Stops sampling after a last sample (a restart loses nothing counted before it). */
  async stop(): Promise<void> {
    clearInterval(this.#timer);
    this.#timer = undefined;
    if (this.#active()) await this.sampleNow();
  }

  /** The charts of `range`, up to the current bucket. */
  async series(range: ActivityRange): Promise<ActivitySeries> {
    const { resolution, stepMs, buckets } = RANGES[range];
    const last = Math.floor(this.#now() / stepMs) * stepMs;
    const times = Array.from({ length: buckets }, (_, index) => last - (buckets - 1 - index) * stepMs);
    let rows = await readRollup(this.#db, resolution, times[0]!);
    // The minutes not folded yet (the last day) are the month's latest hours, summed into hours by the database and
    // added to any hour row of theirs (a fold of stragglers can leave both for one hour).
    if (resolution === 'hour') rows = toHours([...rows, ...(await readMinutesByHour(this.#db, times[0]!))]);
    return { range, resolution, stepMs, times, charts: buildCharts(times, rows) };
  }

  /** The failing sources grouped by normalised error, most sources first. */
  async failures(): Promise<FailureGroup[]> {
    const [failing, recorded] = await Promise.all([this.options.sources.listSources({ state: 'failed' }), readFailures(this.#db, 'source')]);
    return failureGroupsOf(failing, recorded).groups;
  }

  /** Records the failing sources' groups, so that each group's first-seen time outlives the registry's last failure (see store/failures.ts). */
  async #recordFailures(): Promise<void> {
    const failing = await this.options.sources.listSources({ state: 'failed' });
    await recordFailures(this.#db, 'source', failureGroupsOf(failing).subjects);
  }

  /** Requests a sync of every source of group `id`; returns how many. */
  async resyncGroup(id: string): Promise<{ group: string; requested: number; sources: string[] }> {
    // The groups' sources only: their first-seen times (activity_failures) are not needed here.
    const { groups } = failureGroupsOf(await this.options.sources.listSources({ state: 'failed' }));
    const group = groups.find((each) => each.id === id);
    if (!group) throw new FailureGroupNotFoundError(id);
    await this.options.sources.requestSyncByIds(group.sourceIds, { trigger: 'manual' });
    return { group: id, requested: group.sources.length, sources: group.sources };
  }
}
