import type { Registry } from 'prom-client';
import { housekeepMirror, FULL_REPACK_INTERVAL_MS, type HousekeepingPolicy, type HousekeepingRun, type MirrorMeasure } from '../git/housekeeping.js';
import type { GitRunner } from '../git/runner.js';
import type { Logger } from '../logging/logger.js';
import type { Database } from '../store/database.js';
import { housekeepingMetrics, type HousekeepingMetrics } from './metrics.js';
import { HousekeepingRepository, type HousekeepingReport } from './store/housekeeping.js';
import type { SyncedMirror, SyncFollower } from './sync.js';
import type { SourceStatusSection } from './status-sections.js';
import type { SourceWithRegistry } from '../store/types.js';

export type { HousekeepingReport } from './store/housekeeping.js';

export interface MirrorHousekeepingOptions {
  database: Pick<Database, 'db'>;
  runner: GitRunner;
  logger: Logger;
  metrics: Registry;
  settings: { housekeeping: boolean; housekeepingIntervalMs: number; housekeepingPruneGraceMs: number };
}

/**
 * Replication's own sync follower: keeps every mirror fast to serve (see
 * git/housekeeping.ts for the tasks and heuristics). After each synced
 * attempt, under the source's lease, it looks at the mirror, runs what is
 * due, and records the source's report (`status --json` `housekeeping`) when
 * something ran or the measure changed: a no-op sync of a tidy mirror costs
 * one small file read and no database write. Also the `housekeeping` section
 * of `status --json`.
 */
export class MirrorHousekeeping implements SyncFollower, SourceStatusSection {
  readonly name = 'housekeeping';
  readonly #reports: HousekeepingRepository;
  readonly #metrics: HousekeepingMetrics;
  readonly #policy: HousekeepingPolicy;
  /** Sources whose report this process wrote already (the first look after a start always writes one). */
  readonly #reported = new Set<number>();

  constructor(private readonly options: MirrorHousekeepingOptions) {
    this.#reports = new HousekeepingRepository(options.database);
    this.#metrics = housekeepingMetrics(options.metrics, () => this.#reports.totals());
    const { housekeepingIntervalMs, housekeepingPruneGraceMs } = options.settings;
    this.#policy = { intervalMs: housekeepingIntervalMs, pruneGraceMs: housekeepingPruneGraceMs, fullRepackIntervalMs: FULL_REPACK_INTERVAL_MS };
  }

  /** Whether housekeeping runs after syncs (FORGESYNC_HOUSEKEEPING). */
  get enabled(): boolean {
    return this.options.settings.housekeeping;
  }

  async afterSync(synced: SyncedMirror, signal: AbortSignal): Promise<void> {
    if (!this.enabled) return;
    const { source, mirror, result } = synced;
    const run = await housekeepMirror({ runner: this.options.runner, mirror, checksum: result.checksum, refChanges: result.refChanges, policy: this.#policy, signal });
    this.#metrics.checks.inc({ outcome: run.outcomes.length > 0 ? 'ran' : 'tidy' });
    for (const outcome of run.outcomes) {
      this.#metrics.runs.inc({ task: outcome.task, result: outcome.result });
      this.#metrics.duration.observe({ task: outcome.task }, outcome.durationMs / 1000);
    }
    if (run.outcomes.length > 0) this.#log(source.name, run);
    if (run.outcomes.length === 0 && this.#reported.has(source.id) && sameMeasure(run.measure, run.previous)) return;
    await this.#reports.record(toReport(source.id, run));
    this.#reported.add(source.id);
  }

  /** The reports of sources `ids` (by id; a source whose mirror was never looked at has none). */
  reports(ids: readonly number[]): Promise<Map<number, HousekeepingReport>> {
    return this.#reports.find(ids);
  }

  /** Each source's `housekeeping` object in `status --json` (every field null before its mirror was first looked at). */
  async describe(sources: readonly SourceWithRegistry[]): Promise<Map<number, ReturnType<typeof housekeepingJson>>> {
    const reports = await this.reports(sources.map((source) => source.id));
    return new Map(sources.map((source) => [source.id, housekeepingJson(reports.get(source.id))]));
  }

  #log(source: string, run: HousekeepingRun): void {
    const failed = run.outcomes.filter((outcome) => outcome.result === 'failed');
    const tasks = run.outcomes.map((outcome) => `${outcome.task} ${outcome.result} in ${Math.round(outcome.durationMs)} ms`);
    const fields = {
      event: 'housekeeping',
      source,
      tasks: run.outcomes.map((outcome) => outcome.task),
      failed: failed.map((outcome) => ({ task: outcome.task, error: outcome.error })),
      duration_s: Math.round(run.outcomes.reduce((sum, outcome) => sum + outcome.durationMs, 0)) / 1000,
      ...run.measure,
      retained_tips: run.retained,
      ...(run.staleLocks.length > 0 ? { stale_locks_removed: run.staleLocks.map((lock) => lock.path) } : {}),
    };
    if (failed.length > 0) this.options.logger.warn(fields, `housekeeping of ${source}: ${tasks.join(', ')}; the next sync tries again`);
    else this.options.logger.info(fields, `housekeeping of ${source}: ${tasks.join(', ')}`);
  }
}

function sameMeasure(a: MirrorMeasure, b: MirrorMeasure | undefined): boolean {
  return b !== undefined && (Object.keys(a) as (keyof MirrorMeasure)[]).every((key) => a[key] === b[key]);
}

function toReport(sourceId: number, run: HousekeepingRun): HousekeepingReport {
  const { measure } = run;
  return {
    sourceId,
    measuredAt: new Date(),
    lastRunAt: run.lastRunAt === undefined ? null : new Date(run.lastRunAt),
    lastTasks: run.lastTasks,
    packs: measure.packs,
    cruftPacks: measure.cruftPacks,
    looseObjects: measure.looseObjects,
    looseRefs: measure.looseRefs,
  };
}

/** The `housekeeping` object of a source in `status --json`: every field null before the mirror was first looked at. */
export function housekeepingJson(report: HousekeepingReport | undefined) {
  return {
    lastRunAt: report?.lastRunAt?.toISOString() ?? null,
    packs: report?.packs ?? null,
    looseObjects: report?.looseObjects ?? null,
    looseRefs: report?.looseRefs ?? null,
    lastTasks: report?.lastTasks ?? null,
  };
}
