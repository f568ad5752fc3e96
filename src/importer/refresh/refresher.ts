import { setTimeout as sleep } from 'node:timers/promises';
import type { EgressPolicy } from '../../egress/policy.js';
import { LeaseLostError } from '../../leases/errors.js';
import type { Lease } from '../../leases/lease.js';
import { ownerName } from '../../leases/owner.js';
import { Wakeup } from '../../util/wakeup.js';
import { FileHosts } from '../attachments/scan.js';
import type { GithubClient } from '../github/client.js';
import { RunContext, RunStoppedError, type RunDeps } from '../run/context.js';
import { importLeaseKey } from '../run/coordinator.js';
import type { ObjectWorkContext } from '../stages/object-work.js';
import type { ImportRecord } from '../store/imports.js';
import { storedRepository } from '../store/objects.js';
import { anyRefreshWaiting, importsWithRefreshes, waitingRefreshes } from '../store/refreshes.js';
import type { ImporterMetrics } from '../metrics.js';
import type { RefreshEnv } from './apply.js';
import { dueAt, nextRound, refreshRound } from './rounds.js';

export interface RefresherOptions extends RunDeps {
  policy: EgressPolicy;
  filesDir: string;
  maxFileBytes: number;
  /** Runs the import's coordinator here (it refreshes as it runs, see during()). */
  runCoordinator(importId: number, signal: AbortSignal): Promise<unknown>;
  /** Requests a sync of the import (a refresh of a list best read again whole). */
  requestSync(importId: number): Promise<void>;
  /** Wakes whoever refreshes import `importId` (the refresh job). */
  nudge(importId: number): Promise<void>;
  /** Counts each target refreshed by what became of it, and the time since its first delivery. */
  metrics: Pick<ImporterMetrics, 'refreshes' | 'refreshLag'>;
}

/** Waiting refreshes read at once. */
const READ_AT_ONCE = 100;
/** How often a running import looks for refreshes another process recorded (this one's deliveries wake it at once). */
const RUN_POLL_MS = 250;
/** How long a drain between runs stays with the lease once nothing waits, and how often it looks for other processes' deliveries meanwhile. */
const LINGER_MS = 3000;
const LINGER_POLL_MS = 500;
/** Drains lingering at once in one process, at most: each holds a job's place (see REFRESH_JOBS_AT_ONCE in module.ts). */
const MAX_LINGERING = 32;

/** How long what refreshes between runs work with is kept for the next ones. */
const KEEP_MS = 30_000;
/** How often refreshes between runs fold an import's progress rows into one (at most). */
const COMPACT_PROGRESS_MS = 5000;

/**
 * Applies what webhooks named (refresh/intake.ts recorded it): each
 * waiting target is fetched from the API and stored, or removed when the
 * API says it is gone (apply.ts), in rounds whose batch also removes their
 * waiting rows (rounds.ts) — all under the import's lease and fence, like
 * every import write.
 *
 * - While a run goes on, its coordinator refreshes as it runs (during()),
 *   behind the run's guard, with the run's client (one concurrency, one
 *   budget). A refresh racing a page of the run with the same object is
 *   harmless: the newer `updated_at` is the one kept (see objects.ts).
 * - Between runs, the refresh job takes the import's lease for as long as
 *   targets wait, and a little longer (LINGER_MS, woken by this process's
 *   deliveries: see notify), and writes behind the refresh guard (the
 *   import not started, not cancelled). An import that wants a run gets its
 *   coordinator instead: refreshes never starve a sync.
 *
 * A target that cannot be refreshed (an error after the client's retries)
 * is listed as an import failure and dropped: the next sync brings it.
 */
export class Refresher {
  /** Per import, what refreshes between runs keep for the next ones a while (deliveries come in bursts). */
  readonly #kept = new Map<number, { client: GithubClient; hosts: FileHosts; compactedAt: number; expiresAt: number }>();
  readonly #closing = new AbortController();
  /** The imports refreshed in this process now (a run's loop, or a drain between runs), to wake when a delivery comes (see notify). */
  readonly #wake = new Map<number, Wakeup>();
  /** Drains between runs lingering now (see LINGER_MS). */
  #lingering = 0;

  constructor(private readonly options: RefresherOptions) {}

  /** The refresh job of import `importId` (see the class). */
  async run(importId: number, shutdown: AbortSignal): Promise<void> {
    const { imports, leases, leaseTtlMs } = this.options;
    const record = await imports.findById(importId);
    if (!record || record.state === 'cancelled') return;
    const key = importLeaseKey(record.name);
    if (record.state === 'started' || record.state === 'pending') {
      // Its coordinator refreshes as it runs (woken by notify here, polling elsewhere); none runs: this job runs it.
      if (!this.notify(importId) && !(await leases.inspect(key))) await this.options.runCoordinator(importId, shutdown);
      return;
    }
    // A follow-up job of one that read everything: no lease taken for nothing.
    if (!(await anyRefreshWaiting(this.options.database.db, importId))) return;
    const request = { ttlMs: leaseTtlMs, owner: ownerName(`import ${record.name} refresh`), signal: shutdown };
    // Held elsewhere: by a coordinator (which refreshes as it runs) or another refresh job (which reads until none waits).
    await leases.tryWithLease(key, request, (lease, signal) => this.#betweenRuns(record, lease, signal)).catch((error: unknown) => {
      if (error instanceof LeaseLostError || error instanceof RunStoppedError) return;
      throw error;
    });
  }

  /**
   * Wakes whoever refreshes import `importId` in this process, if anyone
   * does (what a delivery recorded then needs no job); returns whether.
   */
  notify(importId: number): boolean {
    const wakeup = this.#wake.get(importId);
    wakeup?.wake();
    return wakeup !== undefined;
  }

  /** Refreshes while run `ctx` goes on, until stop() (awaited before the run ends). */
  during(ctx: RunContext): { stop(): Promise<void> } {
    let stopped = false;
    const wakeup = new Wakeup();
    this.#wake.set(ctx.importId, wakeup);
    const env = { ctx, work: this.#work(ctx) };
    const loop = (async () => {
      while (!stopped && !ctx.signal.aborted) {
        const wantsSync = await this.#drain(env, async () => stopped).catch((error: unknown) => {
          if (!(error instanceof RunStoppedError || error instanceof LeaseLostError)) throw error;
          stopped = true;
          return false;
        });
        if (wantsSync) await this.options.requestSync(ctx.importId);
        if (stopped) break;
        await wakeup.wait(RUN_POLL_MS);
      }
    })().catch((error: unknown) => ctx.logger.warn({ event: 'import_refresh_failed', import: ctx.importName, err: String(error) }, `import ${ctx.importName}: refreshing failed; the refreshes wait for the next pass`));
    return {
      stop: async () => {
        stopped = true;
        wakeup.wake();
        await loop;
        if (this.#wake.get(ctx.importId) === wakeup) this.#wake.delete(ctx.importId);
      },
    };
  }

  /** The scheduler's pass: nudges imports with refreshes waiting whose lease nobody holds (a lost job, a process that died). */
  async sweep(): Promise<void> {
    for (const importId of await importsWithRefreshes(this.options.database.db)) {
      const record = await this.options.imports.findById(importId);
      if (record && !(await this.options.leases.inspect(importLeaseKey(record.name)))) await this.options.nudge(importId);
    }
  }

  /** Lets go of the kept clients. */
  close(): void {
    this.#closing.abort(new Error('the importer is stopping'));
    for (const { client } of this.#kept.values()) client.close();
    this.#kept.clear();
  }

  async #betweenRuns(record: ImportRecord, lease: Lease, signal: AbortSignal): Promise<void> {
    const { imports, database, logger } = this.options;
    const kept = await this.#keptFor(record);
    const ctx = new RunContext({
      record,
      db: database.db,
      imports,
      client: kept.client,
      lease,
      logger,
      signal,
      hosts: kept.hosts,
      concurrency: record.concurrency,
      retry: this.options.retry,
      onCommitted: this.options.onCommitted,
      guard: (fence) => imports.refreshGuardStep(record.id, fence),
    });
    // A run wanted meanwhile (a sync due or requested) takes over: its coordinator refreshes as it runs.
    let first = true;
    const runWanted = async () => {
      const state = first ? record.state : await imports.stateOf(record.id);
      first = false;
      return state !== 'synced' && state !== 'failed';
    };
    const wantsSync = await this.#lingeringDrain({ ctx, work: this.#work(ctx) }, runWanted);
    // Each round appended a progress row, which reads of the import add up: folded now and then, as a run's watchdog does.
    if (Date.now() - kept.compactedAt >= COMPACT_PROGRESS_MS) {
      kept.compactedAt = Date.now();
      await imports.compactProgress(record.id).catch(() => undefined);
    }
    if (wantsSync) await this.options.requestSync(record.id);
  }

  /**
   * Drains (see #drain), then, while few others do, stays a while with the
   * lease for what comes next, woken by this process's deliveries (see
   * notify) and looking every LINGER_POLL_MS for others': a burst that goes
   * on costs no job and no lease each time.
   */
  async #lingeringDrain(env: RefreshEnv, stopWhen: () => Promise<boolean>): Promise<boolean> {
    const { ctx } = env;
    const wakeup = new Wakeup();
    this.#wake.set(ctx.importId, wakeup);
    const lingers = this.#lingering < MAX_LINGERING;
    if (lingers) this.#lingering++;
    try {
      let wantsSync = await this.#drain(env, stopWhen);
      let idleSince = Date.now();
      while (lingers && Date.now() - idleSince < LINGER_MS && !ctx.signal.aborted && !(await stopWhen())) {
        await wakeup.wait(Math.min(LINGER_POLL_MS, LINGER_MS - (Date.now() - idleSince)));
        if (!(await anyRefreshWaiting(ctx.db, ctx.importId))) continue;
        if (await this.#drain(env, stopWhen)) wantsSync = true;
        idleSince = Date.now();
      }
      return wantsSync;
    } finally {
      if (lingers) this.#lingering--;
      if (this.#wake.get(ctx.importId) === wakeup) this.#wake.delete(ctx.importId);
      // A delivery that woke this drain as it ended: its job (the transport runs it after this one).
      if (await anyRefreshWaiting(ctx.db, ctx.importId).catch(() => false)) await this.options.nudge(ctx.importId).catch(() => undefined);
    }
  }

  /**
   * Refreshes what waits, round after round (rounds.ts), until nothing
   * does (targets that come meanwhile included), or `stopWhen` says so
   * (asked before each round); returns whether a target asked for a sync.
   */
  async #drain(env: RefreshEnv, stopWhen: () => Promise<boolean>): Promise<boolean> {
    const { ctx } = env;
    let wantsSync = false;
    for (;;) {
      if (ctx.signal.aborted || (await stopWhen())) return wantsSync;
      const waiting = await waitingRefreshes(ctx.db, ctx.importId, READ_AT_ONCE);
      if (waiting.length === 0) return wantsSync;
      const now = Date.now();
      const round = nextRound(waiting, now, ctx.concurrency);
      if (round.length > 0) {
        if (await refreshRound(env, round, this.options.metrics)) wantsSync = true;
        continue;
      }
      // Nothing due yet: a burst is still settling.
      await sleep(Math.max(1, Math.min(...waiting.map(dueAt)) - now), undefined, { signal: ctx.signal }).catch(() => undefined);
    }
  }

  /** A per-object job's context for a pull request's refresh, on the run's client. */
  #work(ctx: RunContext): ObjectWorkContext {
    const { record } = ctx;
    return {
      db: ctx.db,
      importId: record.id,
      importName: record.name,
      run: record.run,
      mode: 'sync',
      apiUrl: record.apiUrl,
      repoPath: ctx.repoPath,
      hosts: ctx.hosts,
      client: ctx.client,
      policy: this.options.policy,
      tokens: [],
      filesDir: this.options.filesDir,
      maxFileBytes: this.options.maxFileBytes,
      signal: ctx.signal,
    };
  }

  /** What refreshes between runs of `record` work with, kept a while: deliveries come in bursts. */
  async #keptFor(record: ImportRecord): Promise<{ client: GithubClient; hosts: FileHosts; compactedAt: number }> {
    const now = Date.now();
    const found = this.#kept.get(record.id);
    if (found && found.expiresAt > now) {
      found.expiresAt = now + KEEP_MS;
      return found;
    }
    for (const [id, entry] of this.#kept) {
      if (entry.expiresAt > now) continue;
      entry.client.close();
      this.#kept.delete(id);
    }
    const client = await this.options.openClient(record, record.concurrency, this.#closing.signal);
    const hosts = new FileHosts(record.apiUrl, (await storedRepository(this.options.database.db, record.id))?.html_url);
    const entry = { client, hosts, compactedAt: 0, expiresAt: now + KEEP_MS };
    this.#kept.set(record.id, entry);
    return entry;
  }
}
