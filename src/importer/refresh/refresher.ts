import { setTimeout as sleep } from 'node:timers/promises';
import type { EgressPolicy } from '../../egress/policy.js';
import { LeaseLostError } from '../../leases/errors.js';
import type { Lease } from '../../leases/lease.js';
import { ownerName } from '../../leases/owner.js';
import { FileHosts } from '../attachments/scan.js';
import type { GithubClient } from '../github/client.js';
import { RunContext, RunStoppedError, type RunDeps } from '../run/context.js';
import { importLeaseKey } from '../run/coordinator.js';
import type { ObjectWorkContext } from '../stages/object-work.js';
import type { ImportRecord } from '../store/imports.js';
import { storedRepository } from '../store/objects.js';
import { importsWithRefreshes, waitingRefreshes } from '../store/refreshes.js';
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
/** How long a refresh job keeps the import's lease once nothing waits, looking every LINGER_POLL_MS for what comes. */
const LINGER_MS = 2000;
const LINGER_POLL_MS = 100;

/** How long a client made for refreshes between runs is kept for the next ones. */
const CLIENT_TTL_MS = 30_000;

/**
 * Applies what webhooks named (refresh/intake.ts recorded it): each
 * waiting target is fetched from the API and stored, or removed when the
 * API says it is gone (apply.ts), in a batch that also removes its waiting
 * row — all under the import's lease and fence, like every import write.
 *
 * - While a run goes on, its coordinator refreshes as it runs (during()),
 *   behind the run's guard, with the run's client (one concurrency, one
 *   budget). A refresh racing a page of the run with the same object is
 *   harmless: the newer `updated_at` is the one kept (see objects.ts).
 * - Between runs, the refresh job takes the import's lease for as long as
 *   targets wait, and writes behind the refresh guard (the import not
 *   started, not cancelled). An import that wants a run gets its coordinator
 *   instead: refreshes never starve a sync.
 *
 * A target that cannot be refreshed (an error after the client's retries)
 * is listed as an import failure and dropped: the next sync brings it.
 */
export class Refresher {
  readonly #clients = new Map<number, { client: GithubClient; expiresAt: number }>();
  readonly #closing = new AbortController();
  /** Running imports' wake-ups (see during()). */
  readonly #wake = new Map<number, () => void>();

  constructor(private readonly options: RefresherOptions) {}

  /** The refresh job of import `importId` (see the class). */
  async run(importId: number, shutdown: AbortSignal): Promise<void> {
    const { imports, leases, leaseTtlMs } = this.options;
    const record = await imports.findById(importId);
    if (!record || record.state === 'cancelled') return;
    const key = importLeaseKey(record.name);
    if (record.state === 'started' || record.state === 'pending') {
      // Its coordinator refreshes as it runs: woken here, polling elsewhere; none runs: this job runs it.
      const wake = this.#wake.get(importId);
      if (wake) wake();
      else if (!(await leases.inspect(key))) await this.options.runCoordinator(importId, shutdown);
      return;
    }
    // A follow-up job of one that read everything: no lease taken for nothing.
    if ((await waitingRefreshes(this.options.database.db, importId, 1)).length === 0) return;
    const request = { ttlMs: leaseTtlMs, owner: ownerName(`import ${record.name} refresh`), signal: shutdown };
    // Held elsewhere: by a coordinator (which refreshes as it runs) or another refresh job (which reads until none waits).
    await leases.tryWithLease(key, request, (lease, signal) => this.#betweenRuns(record, lease, signal)).catch((error: unknown) => {
      if (error instanceof LeaseLostError || error instanceof RunStoppedError) return;
      throw error;
    });
  }

  /** Refreshes while run `ctx` goes on, until stop() (awaited before the run ends). */
  during(ctx: RunContext): { stop(): Promise<void> } {
    let stopped = false;
    let wake: (() => void) | undefined;
    this.#wake.set(ctx.importId, () => wake?.());
    const env = { ctx, work: this.#work(ctx) };
    const loop = (async () => {
      while (!stopped && !ctx.signal.aborted) {
        const wantsSync = await this.#drain(env, { stopWhen: async () => stopped, lingerMs: 0 }).catch((error: unknown) => {
          if (!(error instanceof RunStoppedError || error instanceof LeaseLostError)) throw error;
          stopped = true;
          return false;
        });
        if (wantsSync) await this.options.requestSync(ctx.importId);
        if (stopped) break;
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, RUN_POLL_MS);
          wake = () => {
            clearTimeout(timer);
            resolve();
          };
        });
        wake = undefined;
      }
    })().catch((error: unknown) => ctx.logger.warn({ event: 'import_refresh_failed', import: ctx.importName, err: String(error) }, `import ${ctx.importName}: refreshing failed; the refreshes wait for the next pass`));
    return {
      stop: async () => {
        stopped = true;
        wake?.();
        await loop;
        this.#wake.delete(ctx.importId);
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
    for (const { client } of this.#clients.values()) client.close();
    this.#clients.clear();
  }

  async #betweenRuns(record: ImportRecord, lease: Lease, signal: AbortSignal): Promise<void> {
    const { imports, database, logger } = this.options;
    const client = await this.#client(record);
    const ctx = new RunContext({
      record,
      db: database.db,
      imports,
      client,
      lease,
      logger,
      signal,
      hosts: new FileHosts(record.apiUrl, (await storedRepository(database.db, record.id))?.html_url),
      concurrency: record.concurrency,
      retry: this.options.retry,
      onCommitted: this.options.onCommitted,
      guard: (fence) => imports.refreshGuardStep(record.id, fence),
    });
    // A run wanted meanwhile (a sync due or requested) takes over: its coordinator refreshes as it runs.
    const runWanted = async () => {
      const state = (await imports.findById(record.id))?.state;
      return state !== 'synced' && state !== 'failed';
    };
    if (await this.#drain({ ctx, work: this.#work(ctx) }, { stopWhen: runWanted, lingerMs: LINGER_MS })) await this.options.requestSync(record.id);
  }

  /**
   * Refreshes what waits, round after round (rounds.ts), until nothing has
   * waited for `lingerMs` (targets that come meanwhile included: a holder
   * that lingers a little spares the next burst a lease and a job), or
   * `stopWhen` says so (asked before each round); returns whether a target
   * asked for a sync.
   */
  async #drain(env: RefreshEnv, options: { stopWhen: () => Promise<boolean>; lingerMs: number }): Promise<boolean> {
    const { ctx } = env;
    let wantsSync = false;
    let idleSince: number | undefined;
    for (;;) {
      if (ctx.signal.aborted || (await options.stopWhen())) return wantsSync;
      const waiting = await waitingRefreshes(ctx.db, ctx.importId, READ_AT_ONCE);
      const now = Date.now();
      const round = nextRound(waiting, now, ctx.concurrency);
      if (round.length > 0) {
        idleSince = undefined;
        if (await refreshRound(env, round, this.options.metrics)) wantsSync = true;
        continue;
      }
      if (waiting.length > 0) idleSince = undefined;
      else if (now - (idleSince ??= now) >= options.lingerMs) return wantsSync;
      const next = waiting.length > 0 ? Math.min(...waiting.map(dueAt)) - now : LINGER_POLL_MS;
      await sleep(Math.max(1, Math.min(next, LINGER_POLL_MS)), undefined, { signal: ctx.signal }).catch(() => undefined);
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

  /** A client for refreshes between runs of `record`, kept a while: deliveries come in bursts. */
  async #client(record: ImportRecord): Promise<GithubClient> {
    const now = Date.now();
    const kept = this.#clients.get(record.id);
    if (kept && kept.expiresAt > now) {
      kept.expiresAt = now + CLIENT_TTL_MS;
      return kept.client;
    }
    for (const [id, entry] of this.#clients) {
      if (entry.expiresAt > now) continue;
      entry.client.close();
      this.#clients.delete(id);
    }
    const client = await this.options.openClient(record, record.concurrency, this.#closing.signal);
    this.#clients.set(record.id, { client, expiresAt: now + CLIENT_TTL_MS });
    return client;
  }
}
