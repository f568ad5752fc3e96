import { LeaseLostError } from '../../leases/errors.js';
import { logLeaseSkip } from '../../leases/skip.js';
import { writeFenced } from '../../leases/fenced.js';
import type { Lease } from '../../leases/lease.js';
import { FileHosts } from '../attachments/scan.js';
import type { GithubClient } from '../github/client.js';
import { storedRepository } from '../store/objects.js';
import { ImportStalledError, isTransientImportError } from '../errors.js';
import { STAGE_RUNNERS, type StageEnv } from '../stages/index.js';
import { listCursors } from '../store/cursors.js';
import type { ImportRecord } from '../store/imports.js';
import { STAGES, type Stage } from '../types.js';
import { RunContext, RunStoppedError, type RunDeps } from './context.js';
import { retryTransient, runRetryDelay } from './retry.js';
import { ownerName } from '../../leases/owner.js';
import { ATTR, withSpan } from '../../tracing/index.js';

/** The lease of an import's coordination (a contract: operators see it in `forgesync lease list`). */
export const importLeaseKey = (name: string) => `import:github:${name.toLowerCase()}`;

/** What a coordinator call ended with. */
export type CoordinatorOutcome = 'synced' | 'failed' | 'stopped' | 'skipped' | 'idle';

export interface CoordinatorOptions extends RunDeps {
  stallTimeoutMs: number;
  /** The sync interval of imports without one of their own: the longest pause before a transient failure's retry. */
  syncIntervalMs: number;
  /** Fan-out and git sources (see StageEnv). */
  env: StageEnv;
  /** Told when a run went through every stage (the final log line, metrics). */
  onFinished(record: ImportRecord, durationMs: number): Promise<void>;
  /** Told when a coordinator found the lease taken. */
  onSkip?: () => void;
  /** Applies webhook refreshes while run `ctx` goes on (see refresh/refresher.ts), until stopped. */
  refreshDuring?: (ctx: RunContext) => { stop(): Promise<void> };
}

/** The lists each stage walks (cursor names), for a stall's reason. */
const STAGE_LISTS: Partial<Record<Stage, string[]>> = {
  base_data: ['labels', 'milestones', 'releases'],
  pull_requests: ['pulls'],
  collaborators: ['collaborators/all', 'collaborators/direct', 'collaborators/outside'],
  issues: ['issues', 'diff_notes'],
  events: ['events'],
  notes: ['notes'],
  protected_branches: ['branches'],
};

/** How often the watchdog looks at the import's progress. */
const WATCH_MS = 1000;
/** How often the watchdog folds the import's progress rows into one (see ImportProgress.compact): reads add them up. */
const COMPACT_PROGRESS_MS = 5000;

/**
 * Runs of an import that may begin and never end before it is parked: a
 * process killed once (a deploy, the OOM killer, a SIGKILL) resumes the
 * import by itself; one that dies in every run (an upstream answer that
 * takes it down) would otherwise take it down again at every start.
 */
export const MAX_UNFINISHED_RUNS = 3;

/**
 * Runs an import's stages under its lease `import:github:<name>`: takes the
 * import (pending or started, its stored fence not above the lease's),
 * runs each stage from the one recorded, advances the stage in a fenced
 * write, and ends the run synced — or failed with the reason, resumable
 * where it stopped (by the scheduler on its own, at a retry time, when the
 * cause was transient; see isTransientImportError). A second coordinator of the same import logs one skip
 * line naming the holder and returns.
 */
export class Coordinator {
  constructor(private readonly options: CoordinatorOptions) {}

  async run(importId: number, shutdown?: AbortSignal): Promise<CoordinatorOutcome> {
    const { imports, leases, logger, leaseTtlMs } = this.options;
    const record = await imports.findById(importId);
    if (!record || (record.state !== 'pending' && record.state !== 'started')) return 'idle';
    const key = importLeaseKey(record.name);
    const attempt = await leases.tryWithLease(
      key,
      {
        ttlMs: leaseTtlMs,
        owner: ownerName(`import ${record.name}`),
        ...(shutdown ? { signal: shutdown } : {}),
        onRenewError: (error) => logger.warn({ event: 'lease_renew_failed', lease_key: key, err: String(error) }, 'lease renewal failed; retrying'),
      },
      (lease, signal) => this.#runs(importId, lease, signal),
    ).catch((error: unknown) => {
      if (error instanceof LeaseLostError || error instanceof RunStoppedError) return { ran: true as const, value: 'stopped' as const };
      throw error;
    });
    if (!attempt.ran) {
      logLeaseSkip(logger, key, attempt.holder, { import: record.name });
      this.options.onSkip?.();
      return 'skipped';
    }
    return attempt.value;
  }

  /** Runs until the import has nothing left to do: a sync requested during a run is served by the next. */
  async #runs(importId: number, lease: Lease, signal: AbortSignal): Promise<CoordinatorOutcome> {
    for (;;) {
      const claimed = await writeFenced(
        lease,
        (fence) => this.options.imports.claim(importId, fence),
        () => this.options.imports.storedFence(importId),
      );
      if (!claimed) return 'idle';
      // The claim counted this run: more than the bound means that many before it never ended.
      if (claimed.unfinishedRuns > MAX_UNFINISHED_RUNS) return this.#park(claimed, lease);
      const outcome = await this.#runOnce(claimed, lease, signal);
      if (outcome !== 'synced') return outcome;
      const after = await this.options.imports.findById(importId);
      if (after?.state !== 'started') return 'synced';
    }
  }

  async #runOnce(record: ImportRecord, lease: Lease, leaseSignal: AbortSignal): Promise<CoordinatorOutcome> {
    const { imports, logger, stallTimeoutMs } = this.options;
    const started = Date.now();
    const stop = new AbortController();
    const signal = AbortSignal.any([leaseSignal, stop.signal]);
    let client: GithubClient;
    let hosts: FileHosts;
    try {
      client = await this.options.openClient(record, record.concurrency, signal);
      hosts = new FileHosts(record.apiUrl, (await storedRepository(this.options.database.db, record.id))?.html_url);
    } catch (error) {
      // A run that cannot start (a credential gone) fails with the reason, like one that fails later: not a job retried forever.
      return this.#fail(record, lease, leaseSignal, record.stage, error);
    }
    const ctx = new RunContext({
      record,
      db: this.options.database.db,
      imports,
      client,
      lease,
      logger,
      signal,
      hosts,
      concurrency: record.concurrency,
      retry: this.options.retry,
      onCommitted: this.options.onCommitted,
    });
    let stage: Stage = record.stage;
    const watchdog = this.#watch(ctx, () => stage, stop, stallTimeoutMs);
    const refreshing = this.options.refreshDuring?.(ctx);
    try {
      await client.learnBudgets();
      for (let index = STAGES.indexOf(record.stage); index < STAGES.length; index++) {
        stage = STAGES[index]!;
        if (stage !== record.stage) await ctx.commit([imports.setStageStep(record.id, stage, Date.now())]);
        logger.info({ event: 'import_stage', import: record.name, stage, run: record.run }, `import ${record.name}: stage ${stage}`);
        await withSpan(`import stage ${stage}`, { [ATTR.import]: record.name, [ATTR.importStage]: stage }, () => STAGE_RUNNERS[stage](ctx, this.options.env));
      }
      await ctx.commit([imports.finishStep(record.id, record.requestedSeq, Date.now())]);
      await this.options.onFinished(record, Date.now() - started);
      return 'synced';
    } catch (error) {
      const stalled = stop.signal.aborted ? (stop.signal.reason as ImportStalledError) : undefined;
      if (error instanceof RunStoppedError || error instanceof LeaseLostError || (leaseSignal.aborted && !stalled)) {
        // Stopped, not dead (a lost lease is no failure: its new holder goes on): this run ended and does not count towards parking.
        await imports.stopped(record.id, record.run, lease.fence).catch(() => undefined);
        return 'stopped';
      }
      return this.#fail(record, lease, leaseSignal, stage, stalled ?? error);
    } finally {
      await refreshing?.stop();
      watchdog.stop();
      client.close();
    }
  }

  /**
   * Records the run failed with `error`'s message (resumable where it
   * stopped). A transient cause (isTransientImportError: the step's own
   * retries ran out) also gets a retry time, at which the scheduler resumes
   * the import; the pause grows with each such failure in a row, up to the
   * sync interval. A permanent one waits for `import resume` (or the next
   * sync of an import that finished once), as the reason says.
   */
  async #fail(record: ImportRecord, lease: Lease, leaseSignal: AbortSignal, stage: Stage, error: unknown): Promise<CoordinatorOutcome> {
    const { imports, logger, retry } = this.options;
    const now = Date.now();
    const message = error instanceof Error ? error.message : String(error);
    const retryAt = isTransientImportError(error) ? now + runRetryDelay(record.transientFailures + 1, retry, record.intervalMs ?? this.options.syncIntervalMs) : null;
    const reason =
      retryAt === null
        ? message
        : `${message} (a transient failure: the import resumes by itself at ${new Date(retryAt).toISOString()}, or now with forgesync import resume ${record.name})`;
    // The database that failed the run may still be refusing: the failure is written with the same retries as a step.
    const failed = await retryTransient(() => imports.fail(record.id, record.run, lease.fence, { reason, retry: retryAt === null ? 'on-interval' : { at: retryAt } }, now), {
      retry,
      signal: leaseSignal,
      logger,
      fields: { import: record.name, step: 'fail' },
    }).catch(() => false);
    logger.warn(
      { event: 'import_failed', import: record.name, stage, err: reason, transient: retryAt !== null, ...(retryAt !== null ? { retry_at: new Date(retryAt).toISOString() } : {}) },
      `import ${record.name} failed at stage ${stage}: ${reason}`,
    );
    return failed ? 'failed' : 'stopped';
  }

  /**
   * Parks an import whose last MAX_UNFINISHED_RUNS runs began and never
   * ended (the process died in each): failed, with a reason saying so and
   * how to go on, instead of a fourth start that would die the same way.
   */
  async #park(record: ImportRecord, lease: Lease): Promise<CoordinatorOutcome> {
    const runs = record.unfinishedRuns - 1;
    const reason =
      `stopped after ${runs} runs that did not finish: the process ended during each (killed, or out of memory) with the import at stage ${record.stage}; ` +
      `see the log for what it was doing, then continue it with forgesync import resume ${record.name}`;
    const parked = await this.options.imports.fail(record.id, record.run, lease.fence, { reason, retry: 'never' }).catch(() => false);
    this.options.logger.warn({ event: 'import_parked', import: record.name, stage: record.stage, unfinished_runs: runs, err: reason }, `import ${record.name} parked: ${reason}`);
    return parked ? 'failed' : 'stopped';
  }

  /**
   * Fails the run when the import makes no progress (no write by the
   * coordinator or any of its jobs) for `timeoutMs`. Waiting for a rate
   * limit's reset counts as progress: the import is doing what it should.
   */
  #watch(ctx: RunContext, stage: () => Stage, stop: AbortController, timeoutMs: number): { stop(): void } {
    let last = Date.now();
    let compacted = Date.now();
    let busy = false;
    const timer = setInterval(() => {
      if (busy) return;
      busy = true;
      void (async () => {
        const now = Date.now();
        if (now - compacted >= COMPACT_PROGRESS_MS) {
          compacted = now;
          // Best effort: rows left for the next time only make reads add a few more.
          await this.options.imports.compactProgress(ctx.importId).catch(() => undefined);
        }
        const row = await this.options.imports.findById(ctx.importId);
        last = Math.max(last, row?.progressAt ?? 0);
        if (ctx.client.budgets().some((budget) => budget.available(now) <= 0 || budget.nextAt > now)) last = now;
        if (now - last < timeoutMs) return;
        stop.abort(new ImportStalledError(stage(), await this.#where(ctx, stage()), now - last));
      })()
        .catch(() => undefined)
        .finally(() => {
          busy = false;
        });
    }, Math.min(WATCH_MS, Math.max(10, Math.floor(timeoutMs / 4))));
    timer.unref();
    return { stop: () => clearInterval(timer) };
  }

  /** Where a stage stands, for a stall's reason: the walks not done, or the jobs still pending. */
  async #where(ctx: RunContext, stage: Stage): Promise<string> {
    const pending = await this.options.waiter.pending(ctx.importId, stage, ctx.run, 5);
    if (pending.length > 0) {
      const progress = await this.options.waiter.progress(ctx.importId, stage, ctx.run);
      return `${progress.pending} of ${progress.pending + progress.done + progress.failed} jobs pending, e.g. ${pending.join(', ')}`;
    }
    const cursors = new Map((await listCursors(ctx.db, ctx.importId)).filter((cursor) => cursor.run === ctx.run).map((cursor) => [cursor.collection, cursor]));
    const open = (STAGE_LISTS[stage] ?? []).filter((name) => !cursors.get(name)?.done);
    if (open.length === 0) return 'no list in progress';
    return open
      .map((name) => {
        const cursor = cursors.get(name);
        return `${name}: ${cursor?.pages ?? 0} page(s) done${cursor?.lastPage && cursor.claimedLast === null ? ` of ${cursor.lastPage}` : ''}`;
      })
      .join('; ');
  }
}
