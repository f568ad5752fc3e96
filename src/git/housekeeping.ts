import { performance } from 'node:perf_hooks';
import type { RefChange } from '../store/change-log.js';
import type { GitRunner } from './runner.js';
import { localRefs, readRefFiles, refsChecksum, type RefMap } from './refs.js';
import { expireRetainedTips, measureMirror, readHousekeepingState, removeStaleHousekeepingLocks, retainTips, writeHousekeepingState, type HousekeepingState, type MirrorMeasure } from './housekeeping-state.js';
import type { RemovedLock } from './locks.js';

export { measureMirror, readHousekeepingState, retainTips, writeHousekeepingState, type HousekeepingState, type MirrorMeasure } from './housekeeping-state.js';

/*
 * Housekeeping of a bare mirror, the way Gitaly optimises repositories: cheap
 * measures decide (heuristics below), and only what is due runs.
 *
 * - `geometric-repack`: `git repack --geometric=2 -d --write-midx
 *   --write-bitmap-index`. Rolls loose objects and the small packs into one
 *   new pack so that pack sizes stay a geometric progression (a few packs,
 *   whatever the push rate), and rewrites the multi-pack index and its
 *   reachability bitmap over all packs. Never drops an object.
 * - `full-repack`: `git repack -a -d --cruft [--cruft-expiration=<cutoff>]
 *   --write-midx --write-bitmap-index`, then `git prune --expire=<cutoff>`.
 *   Everything reachable (from refs and from the HEAD reflog, where retained
 *   tips live) goes into one pack; the unreachable rest into a cruft pack that
 *   records each object's mtime, minus the objects older than the cutoff, and
 *   prune deletes the loose ones older than it (git 2.39's repack leaves loose
 *   objects alone when given an expiration): the only task that deletes objects.
 * - `pack-refs`: `git pack-refs --all`: loose ref files into packed-refs.
 * - `commit-graph`: `git commit-graph write --reachable --split`.
 *
 * Safe for readers (upload-pack through the served view, snapshots' cat-file):
 * git writes every new pack, index and midx under a temporary name and
 * renames it in, and deletes an old pack only once its objects are in a new
 * one; a reader that has a pack open keeps reading it (unlinked files live on
 * while open), and one that finds a listed pack gone looks the object up
 * again in the packs present (git's reprepare). What a reader can lose is only
 * an object nothing reaches any more, so `full-repack` keeps every object
 * that is younger than the grace period or reachable from a tip served within
 * it (see retainTips): a clone or snapshot that started before a ref moved
 * has that long to finish. Run under the source's lease: never beside a sync.
 */

/** One thing housekeeping does to a mirror, in the order they run. */
export type HousekeepingTask = 'full-repack' | 'geometric-repack' | 'pack-refs' | 'commit-graph';

/** When housekeeping acts (see {@link planHousekeeping}). */
export interface HousekeepingPolicy {
  /** The longest an untidy mirror waits for housekeeping (loose objects or refs, packs outside the midx, below the limits). */
  intervalMs: number;
  /** How long an unreachable object is kept after it was last written or served (the cruft expiration). */
  pruneGraceMs: number;
  /** A full repack (and pruning) at most this often, and only when refs moved since the last one. */
  fullRepackIntervalMs: number;
}

/** What one run is to do: the tasks, and the cutoff of `full-repack` (null: keep every unreachable object). */
export interface HousekeepingPlan {
  tasks: HousekeepingTask[];
  /** Unreachable objects last written before this (epoch ms) are deleted by `full-repack`; null: none. */
  pruneBefore: number | null;
}

/** Loose objects that make a geometric repack due at once (git's `fetch.unpackLimit`: a bigger fetch writes a pack anyway). */
export const LOOSE_OBJECTS_LIMIT = 100;
/** Packs written since the multi-pack index that make a repack due at once (their objects are outside the bitmap). */
export const PACKS_OUTSIDE_MIDX_LIMIT = 4;
/** Packs that make a repack due at once: geometric repacks keep about log2(objects) of them. */
export const PACKS_LIMIT = 16;
/**
 * Loose refs that make `pack-refs` due at once (each is a file every ref read
 * opens), Gitaly's rule: 16, or more as packed-refs grows (a pack-refs rewrites
 * all of it), log₁.₁₅(bytes / 100): 77 for 5 MB (100k refs).
 */
export function looseRefsLimit(packedRefsBytes: number): number {
  return Math.max(16, Math.ceil(Math.log(Math.max(packedRefsBytes, 1) / 100) / Math.log(1.15)));
}
/** Default of {@link HousekeepingPolicy.fullRepackIntervalMs}: a week, as Gitaly's full repack cool-down is days. */
export const FULL_REPACK_INTERVAL_MS = 7 * 86_400_000;
/** Time limit of one housekeeping git command: a full repack of a large mirror takes a while. */
const TASK_TIMEOUT_MS = 60 * 60_000;

/**
 * The heuristics. Given the mirror's measure, its state and its refs
 * checksum now:
 * - `full-repack` when the last one (or the first sight of the mirror) is
 *   older than `fullRepackIntervalMs` and refs moved since (only then can
 *   anything have become unreachable);
 * - otherwise `geometric-repack` when loose objects ≥ {@link LOOSE_OBJECTS_LIMIT},
 *   packs outside the midx ≥ {@link PACKS_OUTSIDE_MIDX_LIMIT}, packs ≥
 *   {@link PACKS_LIMIT}, there are packs but no bitmap, or, once
 *   `intervalMs` passed since the last run, any loose object or pack outside the midx;
 * - `pack-refs` when loose refs ≥ {@link looseRefsLimit}, or any once `intervalMs` passed;
 * - `commit-graph` after any repack (new commits), or when there is none.
 * A tidy mirror (one pack with its bitmap, packed refs, a commit-graph) gets nothing.
 */
export function planHousekeeping(input: { measure: MirrorMeasure; state: HousekeepingState; checksum: string; policy: HousekeepingPolicy; now: number }): HousekeepingPlan {
  const { measure, state, checksum, policy, now } = input;
  const due = state.lastRunAt === undefined || now - state.lastRunAt >= policy.intervalMs;
  const tasks: HousekeepingTask[] = [];
  const fullDue = state.fullRepackAt !== undefined && now - state.fullRepackAt >= policy.fullRepackIntervalMs && state.fullRepackChecksum !== checksum;
  const hasObjects = measure.packs + measure.looseObjects > 0;
  const geometricDue =
    measure.looseObjects >= LOOSE_OBJECTS_LIMIT ||
    measure.packsOutsideMidx >= PACKS_OUTSIDE_MIDX_LIMIT ||
    measure.packs >= PACKS_LIMIT ||
    (measure.packs > 0 && !measure.bitmap) ||
    (due && (measure.looseObjects > 0 || measure.packsOutsideMidx > 0));
  if (fullDue && hasObjects) tasks.push('full-repack');
  else if (geometricDue) tasks.push('geometric-repack');
  if (measure.looseRefs >= looseRefsLimit(measure.packedRefsBytes) || (due && measure.looseRefs > 0)) tasks.push('pack-refs');
  if (tasks.some((task) => task.endsWith('repack')) || (hasObjects && !measure.commitGraph)) tasks.push('commit-graph');
  return { tasks, pruneBefore: prunableBefore(state, policy, now) };
}

/** The cutoff of pruning now: the grace period back, or null while an embargo holds (see HousekeepingState). */
function prunableBefore(state: HousekeepingState, policy: HousekeepingPolicy, now: number): number | null {
  if (state.pruneEmbargoUntil !== undefined && now < state.pruneEmbargoUntil) return null;
  return now - policy.pruneGraceMs;
}

/** How one task went. */
export interface TaskOutcome {
  task: HousekeepingTask;
  result: 'done' | 'failed';
  durationMs: number;
  error?: string;
}

/**
 * Runs `plan` on the bare repository `mirror`, task after task; a failed task
 * is reported and does not stop the others (a pack-refs can run when a repack
 * could not). Before a full repack, retained tips older than the prune cutoff
 * are let go. Returns each task's outcome and the measure afterwards.
 * The caller holds the source's lease; `signal` kills the running git.
 */
export async function runHousekeeping(options: { runner: GitRunner; mirror: string; plan: HousekeepingPlan; signal?: AbortSignal }): Promise<{ outcomes: TaskOutcome[]; measure: MirrorMeasure; staleLocks: RemovedLock[] }> {
  const { runner, mirror, plan, signal } = options;
  const outcomes: TaskOutcome[] = [];
  const staleLocks = plan.tasks.length > 0 ? removeStaleHousekeepingLocks(mirror) : [];
  for (const task of plan.tasks) {
    if (signal?.aborted) break;
    const started = performance.now();
    try {
      if (task === 'full-repack' && plan.pruneBefore !== null) expireRetainedTips(mirror, plan.pruneBefore);
      for (const args of taskCommands(task, plan.pruneBefore)) await runner.run([`--git-dir=${mirror}`, ...args], { timeoutMs: TASK_TIMEOUT_MS, ...(signal ? { signal } : {}) });
      outcomes.push({ task, result: 'done', durationMs: performance.now() - started });
    } catch (error) {
      if (signal?.aborted) throw error;
      outcomes.push({ task, result: 'failed', durationMs: performance.now() - started, error: String((error as Error)?.message ?? error) });
    }
  }
  return { outcomes, measure: measureMirror(mirror), staleLocks };
}

/** `full-repack` keeping every unreachable object (no prune cutoff): all reachable in one pack, the rest in a cruft pack, with a midx and bitmaps. */
export const FULL_REPACK_ARGS: readonly string[] = ['repack', '-q', '-a', '-d', '--cruft', '--write-midx', '--write-bitmap-index'];

/** The git commands of one task. */
function taskCommands(task: HousekeepingTask, pruneBefore: number | null): string[][] {
  switch (task) {
    case 'geometric-repack':
      return [['repack', '-q', '--geometric=2', '-d', '--write-midx', '--write-bitmap-index']];
    case 'full-repack': {
      if (pruneBefore === null) return [[...FULL_REPACK_ARGS]];
      // `@<seconds> +0000` is git's raw date format: read exactly, whatever the locale.
      const cutoff = `@${Math.floor(pruneBefore / 1000)} +0000`;
      // As `git gc` does: with an expiration, repack drops the old objects of cruft packs and
      // leaves unreachable loose objects alone; prune deletes the old ones (and keeps what the reflog reaches).
      return [
        ['repack', '-q', '-a', '-d', '--cruft', `--cruft-expiration=${cutoff}`, '--write-midx', '--write-bitmap-index'],
        ['prune', `--expire=${cutoff}`],
      ];
    }
    case 'pack-refs':
      return [['pack-refs', '--all']];
    case 'commit-graph':
      return [['commit-graph', 'write', '--reachable', '--split', '--no-progress']];
  }
}

/** What {@link housekeepMirror} is given: the mirror as a sync just left it. */
export interface HousekeepMirrorOptions {
  runner: GitRunner;
  mirror: string;
  /** The mirror's refs checksum now (MirrorSyncResult.checksum). */
  checksum: string;
  /** The refs the sync moved, created or deleted (MirrorSyncResult.refChanges). */
  refChanges: readonly RefChange[];
  policy: HousekeepingPolicy;
  now?: number;
  signal?: AbortSignal;
}

/** What one look at a mirror found and did. */
export interface HousekeepingRun {
  /** The tasks run (none: the mirror was tidy), each with how it went. */
  outcomes: TaskOutcome[];
  /** The measure after the run (before it, when nothing ran). */
  measure: MirrorMeasure;
  /** The measure the previous look left (undefined at the first). */
  previous: MirrorMeasure | undefined;
  /** When housekeeping last ran a task on this mirror (this run's start when it ran one). */
  lastRunAt: number | undefined;
  /** The tasks of that run. */
  lastTasks: HousekeepingTask[];
  /** Tips retained by this look (tips moved or deleted by the sync). */
  retained: number;
  /** Lock files a killed housekeeping git had left, removed before this run. */
  staleLocks: RemovedLock[];
}

/**
 * Housekeeping after a sync: records the tips the sync moved away (see
 * retainTips), measures the mirror (reusing the last measure when neither
 * refs nor the mirror's objects can have changed: a no-op sync costs one
 * small file read), runs what the heuristics say is due and keeps the state
 * in the mirror. The caller holds the source's lease.
 */
export async function housekeepMirror(options: HousekeepMirrorOptions): Promise<HousekeepingRun> {
  const { runner, mirror, checksum, policy, signal } = options;
  const now = options.now ?? Date.now();
  const state = readHousekeepingState(mirror);
  const previous = state.measured;
  let retained = 0;
  const unchanged = state.refsChecksum === checksum;
  if (!unchanged) {
    // A fast-forwarded branch's old tip stays reachable from the new one; a deleted ref's, a
    // force-pushed one's and a moved tag's (its old tag object) do not.
    const moved = options.refChanges.filter((change) => change.before !== null && (change.after === null || change.forced || change.ref.startsWith('refs/tags/')));
    retained = retainTips(mirror, moved.map((change) => change.before!), now);
    // Tips that went while nobody looked (first sight, or a follower that never ran) are unknown: prune nothing for a grace period.
    const seen = state.refsChecksum !== undefined && refsChecksum(refsBefore(await currentRefs(runner, mirror, signal), options.refChanges)) === state.refsChecksum;
    if (!seen) state.pruneEmbargoUntil = now + policy.pruneGraceMs;
    state.fullRepackAt ??= now;
    state.refsChecksum = checksum;
  }
  const measure = unchanged && state.measured ? state.measured : measureMirror(mirror);
  const plan = planHousekeeping({ measure, state, checksum, policy, now });
  let outcomes: TaskOutcome[] = [];
  let staleLocks: RemovedLock[] = [];
  let after = measure;
  if (plan.tasks.length > 0) {
    ({ outcomes, measure: after, staleLocks } = await runHousekeeping({ runner, mirror, plan, ...(signal ? { signal } : {}) }));
    state.lastRunAt = now;
    state.lastTasks = outcomes.map((outcome) => outcome.task);
    if (outcomes.some((outcome) => outcome.task === 'full-repack' && outcome.result === 'done')) {
      state.fullRepackAt = now;
      state.fullRepackChecksum = checksum;
    }
  }
  // A look that changed nothing (a no-op sync of a tidy mirror) writes nothing either.
  if (!unchanged || outcomes.length > 0 || state.measured === undefined) {
    state.measured = after;
    writeHousekeepingState(mirror, state);
  }
  return { outcomes, measure: after, previous, lastRunAt: state.lastRunAt, lastTasks: (state.lastTasks ?? []) as HousekeepingTask[], retained, staleLocks };
}

/** The refs of `mirror`, from its files when they are plain, from git otherwise. */
async function currentRefs(runner: GitRunner, mirror: string, signal: AbortSignal | undefined): Promise<RefMap> {
  return readRefFiles(mirror) ?? (await localRefs(runner, mirror, signal ? { signal } : {}));
}

/** The refs as they were before `changes` (each change undone). */
function refsBefore(after: RefMap, changes: readonly RefChange[]): RefMap {
  const before = new Map(after);
  for (const change of changes) {
    if (change.before === null) before.delete(change.ref);
    else before.set(change.ref, change.before);
  }
  return before;
}
