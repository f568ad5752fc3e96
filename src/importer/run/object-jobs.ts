import { setTimeout as sleep } from 'node:timers/promises';
import type { BoundToken } from '../../credentials/store.js';
import type { EgressPolicy } from '../../egress/policy.js';
import { writeFenced } from '../../leases/fenced.js';
import type { Lease } from '../../leases/lease.js';
import { FileHosts } from '../attachments/scan.js';
import { storedRepository } from '../store/objects.js';
import type { GithubClient } from '../github/client.js';
import { zeroCounts, type RequestCounts } from '../github/request-counts.js';
import { Semaphore } from '../github/pacer.js';
import { failureSteps, objectWork } from '../stages/object-work.js';
import { guardedList, runBatch } from '../../store/batch.js';
import type { ImportRecord } from '../store/imports.js';
import type { Stage } from '../types.js';
import { takeCounts, type RunContext, type RunDeps } from './context.js';
import { importLeaseKey } from './coordinator.js';
import { afterImportWrite } from './crash-test-hook.js';
import { retryTransient } from './retry.js';
import { ownerName } from '../../leases/owner.js';
import { allowListeners, LISTENERS_PER_TASK } from '../../util/abort-listeners.js';

export interface ObjectJobsOptions extends RunDeps {
  tokens(record: ImportRecord): Promise<BoundToken[]>;
  policy: EgressPolicy;
  filesDir: string;
  maxFileBytes: number;
  /** Queues the job `key` of import `importId` on the transport. */
  enqueue(importId: number, key: string): Promise<void>;
  runsJobs(): boolean;
}

/** How often the waiter looks at a fan-out stage's jobs. */
const POLL_MS = 100;
/** Pending jobs are queued again this often (a queue that lost them, a worker that died). */
const REQUEUE_MS = 30_000;

/**
 * The per-object jobs of fan-out stages (reviews per pull request, file
 * downloads, user profiles): each runs under a lease of its own,
 * `import:github:<name>:<key>`, and stores what it fetched in the same
 * transaction that marks its row in the stage waiter done, guarded by that
 * lease's fence and by the import still running the same run.
 */
/** What the jobs of one run share in this process. */
interface PreparedRun {
  client: GithubClient;
  hosts: FileHosts;
  tokens: BoundToken[];
  /** The client's counts already added to the import's row. */
  taken: RequestCounts;
  /**
   * Jobs of the run between asking and having stored their answer, at most:
   * a few more than the client's requests in flight, so that one job's
   * write overlaps the next job's request — not more, or when writes are
   * slower than answers (a busy database) answers pile up unstored, and a
   * crash loses every one of them (their requests are made again).
   */
  answering: Semaphore;
}

/**
 * Jobs one process runs at once for an import of `concurrency`: twice the
 * requests it may have in flight (the run's client bounds those), so that
 * while some jobs take their lease or store their answer, others keep
 * every request slot busy. At 1, one job at a time: the sequential importer.
 */
export function jobsAtOnce(concurrency: number): number {
  return concurrency === 1 ? 1 : concurrency * 2;
}

/** How long a run's shared client outlives its last job. */
const PREPARED_TTL_MS = 30_000;

export class ObjectJobs {
  readonly #runs = new Map<string, { value: PreparedRun; expiresAt: number }>();
  /** Aborts the shared clients' waits when the process stops. */
  readonly #closing = new AbortController();

  constructor(private readonly options: ObjectJobsOptions) {}

  /** Aborts what the shared clients wait for (rate-limit resets) and forgets them. */
  close(): void {
    this.#closing.abort(new Error('the importer is stopping'));
    for (const entry of this.#runs.values()) entry.value.client.close();
    this.#runs.clear();
  }

  /**
   * Records the stage's jobs, queues them, and returns once none is
   * pending. A process that does not run jobs (the CLI's `--wait`) runs them
   * itself as well; leases keep any job from running twice at once.
   */
  async fanOut(ctx: RunContext, stage: Stage, keys: readonly string[]): Promise<void> {
    const { waiter } = this.options;
    // The stage waiter's reads and its (idempotent) insert are tried again after a transient failure, like a commit.
    const again = <T>(step: string, read: () => Promise<T>) =>
      retryTransient(read, { retry: this.options.retry, signal: ctx.signal, logger: ctx.logger, fields: { import: ctx.importName, step, stage } });
    await again('jobs_add', () => waiter.add(ctx.importId, stage, ctx.run, keys));
    afterImportWrite();
    const pending = await again('jobs_pending', () => waiter.pending(ctx.importId, stage, ctx.run));
    if (pending.length === 0) return;
    for (const key of pending) await this.options.enqueue(ctx.importId, key);
    const helping = this.options.runsJobs() ? Promise.resolve() : this.#runAll(ctx, pending);
    let queuedAt = Date.now();
    for (;;) {
      const progress = await again('jobs_progress', () => waiter.progress(ctx.importId, stage, ctx.run));
      if (progress.pending === 0) break;
      if (Date.now() - queuedAt > REQUEUE_MS) {
        for (const key of await again('jobs_pending', () => waiter.pending(ctx.importId, stage, ctx.run))) await this.options.enqueue(ctx.importId, key);
        queuedAt = Date.now();
      }
      await sleep(POLL_MS, undefined, { signal: ctx.signal });
    }
    await helping;
  }

  async #runAll(ctx: RunContext, keys: readonly string[]): Promise<void> {
    let index = 0;
    const workers = Math.max(1, Math.min(jobsAtOnce(ctx.concurrency), keys.length));
    allowListeners(ctx.signal, LISTENERS_PER_TASK * workers);
    const worker = async () => {
      while (index < keys.length && !ctx.signal.aborted) await this.run(ctx.importId, keys[index++]!, ctx.signal, ctx.record).catch(() => undefined);
    };
    await Promise.all(Array.from({ length: workers }, worker));
  }

  /** A job from the transport: its key is `<import id>:<job key>`. */
  async runJob(jobKey: string, signal: AbortSignal): Promise<void> {
    const at = jobKey.indexOf(':');
    await this.run(Number(jobKey.slice(0, at)), jobKey.slice(at + 1), signal);
  }

  /**
   * What the jobs of one run share (the client and its budgets, the file
   * hosts, the tokens), made once per run and kept while its jobs come:
   * a job then costs its request and its writes, not a setup.
   */
  async #prepared(record: ImportRecord): Promise<PreparedRun> {
    const key = `${record.id}:${record.run}`;
    const cached = this.#runs.get(key);
    if (cached && cached.expiresAt > Date.now()) {
      cached.expiresAt = Date.now() + PREPARED_TTL_MS;
      return cached.value;
    }
    const { database } = this.options;
    const hosts = new FileHosts(record.apiUrl, (await storedRepository(database.db, record.id))?.html_url);
    // Requests of all of a run's jobs in this process go through one client: its concurrency bounds them together.
    const client = await this.options.openClient(record, record.concurrency, this.#closing.signal);
    const value: PreparedRun = {
      client,
      hosts,
      tokens: await this.options.tokens(record),
      taken: zeroCounts(),
      answering: new Semaphore(client.concurrency + Math.ceil(client.concurrency / 4)),
    };
    for (const [other, entry] of this.#runs) {
      if (entry.expiresAt > Date.now()) continue;
      entry.value.client.close();
      this.#runs.delete(other);
    }
    this.#runs.set(key, { value, expiresAt: Date.now() + PREPARED_TTL_MS });
    return value;
  }

  /**
   * Runs job `key` of import `importId` if its lease is free and, under
   * the lease, its row is still pending. `running`: the run as the
   * coordinator that just listed the job pending has it (no need to read
   * it again; the guarded write refuses a job of a run that ended all the same).
   */
  async run(importId: number, key: string, shutdown: AbortSignal, running?: ImportRecord): Promise<void> {
    // A job that failed for a transient cause (its lease, a read; its write tries again by itself)
    // runs again here: failed, it would only be queued again by its coordinator, REQUEUE_MS later.
    let failed = false;
    await retryTransient(
      async () => {
        try {
          await this.#runOnce(importId, key, shutdown, { ...(running ? { running } : {}), afterFailure: failed });
        } catch (error) {
          failed = true;
          throw error;
        }
      },
      { retry: this.options.retry, signal: shutdown, logger: this.options.logger, fields: { import_id: importId, step: 'job_run', job: key } },
    );
  }

  /**
   * One try of job `key` (see run). `afterFailure`: an earlier try of the
   * same call failed, and the lease it held may still be taken — its
   * release lost with the connection that failed it — so a lease found
   * taken is waited for, until it lapses, instead of skipping the job as
   * one that runs elsewhere.
   */
  async #runOnce(importId: number, key: string, shutdown: AbortSignal, options: { running?: ImportRecord; afterFailure: boolean }): Promise<void> {
    const { running } = options;
    const { imports, waiter, leases, logger, leaseTtlMs, database } = this.options;
    const record = running ?? (await imports.findById(importId));
    if (!record || record.state !== 'started') return;
    const prepared = await this.#prepared(record);
    const leaseKey = `${importLeaseKey(record.name)}:${key}`.slice(0, 512);
    const request = { ttlMs: leaseTtlMs, owner: ownerName(`import ${record.name} ${key}`), signal: shutdown };
    const job = async (lease: Lease, signal: AbortSignal): Promise<void> => {
      // The row is read under the lease, not before it: a job may wait long for its lease or a place in
      // `answering` (its process stopped, its answers slow to store), and meanwhile another holder may
      // have done it. Read here, a job done elsewhere costs this read, not its requests again.
      const row = await waiter.find(importId, key);
      if (!row || row.state !== 'pending' || row.run !== record.run) return;
      const work = {
        db: database.db,
        importId,
        importName: record.name,
        run: record.run,
        mode: record.mode,
        apiUrl: record.apiUrl,
        repoPath: `/repos/${encodeURIComponent(record.owner)}/${encodeURIComponent(record.repo)}`,
        hosts: prepared.hosts,
        client: prepared.client,
        policy: this.options.policy,
        tokens: prepared.tokens,
        filesDir: this.options.filesDir,
        maxFileBytes: this.options.maxFileBytes,
        signal,
      };
      const outcome = await objectWork(work, key);
      const counts = takeCounts(prepared.client, prepared.taken);
      const steps = failureSteps(work, outcome);
      const state = 'failure' in outcome && outcome.failure ? 'failed' : 'done';
      // What was fetched is written again after a transient failure, not fetched again: that would cost its requests twice.
      const written = await retryTransient(
        () =>
          writeFenced(
            lease,
            (fence) =>
              runBatch(
                database.db,
                guardedList({
                  guards: [
                    imports.jobGuardStep(importId, record.run),
                    waiter.finishStep(importId, key, record.run, fence, { state, error: 'failure' in outcome ? outcome.failure?.error : null }, Date.now()),
                  ],
                  steps: [imports.progressStep(importId, Date.now(), counts, null), ...steps],
                }),
              ),
            () => waiter.storedFence(importId, key),
          ),
        { retry: this.options.retry, signal, logger, fields: { import: record.name, step: 'job', job: key } },
      );
      if (written) {
        afterImportWrite();
        this.options.onCommitted?.();
      }
    };
    const done = await prepared.answering.acquire(shutdown);
    let attempt;
    try {
      attempt = await leases.tryWithLease(leaseKey, request, job);
      if (!attempt.ran && options.afterFailure && (await this.#lapsed(leaseKey, shutdown))) attempt = await leases.tryWithLease(leaseKey, request, job);
    } finally {
      done();
    }
    if (!attempt.ran) logger.debug({ event: 'import_job_skip', import: record.name, job: key }, `import job ${key} runs elsewhere`);
  }

  /** Waits until lease `key` is free, at most its time to live and a second; returns whether it is. */
  async #lapsed(key: string, shutdown: AbortSignal): Promise<boolean> {
    const deadline = Date.now() + this.options.leaseTtlMs + 1000;
    while (await this.options.leases.inspect(key)) {
      if (Date.now() > deadline || shutdown.aborted) return false;
      await sleep(Math.min(POLL_MS, this.options.leaseTtlMs / 10), undefined, { signal: shutdown }).catch(() => undefined);
    }
    return true;
  }
}
