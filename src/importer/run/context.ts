import type { Kysely } from 'kysely';
import type { Lease } from '../../leases/lease.js';
import { writeFenced } from '../../leases/fenced.js';
import type { Logger } from '../../logging/logger.js';
import type { LeaseManager } from '../../leases/manager.js';
import type { Database } from '../../store/database.js';
import type { StageWaiter } from '../store/jobs.js';
import type { Schema } from '../../store/types.js';
import { ForgesyncError } from '../../errors.js';
import type { GithubClient } from '../github/client.js';
import type { RateBudget } from '../github/pacer.js';
import { zeroCounts, type RequestCounts } from '../github/request-counts.js';
import { guardedList, runBatch } from '../../store/batch.js';
import type { ImportRecord, ImportRepository } from '../store/imports.js';
import type { Compilable } from 'kysely';
import type { FileHosts } from '../attachments/scan.js';
import { PageBudget } from './page-budget.js';
import { afterImportWrite } from './crash-test-hook.js';
import { retryTransient, type ImportRetry } from './retry.js';

/** What the coordinator and the per-object jobs both run on. */
export interface RunDeps {
  database: Pick<Database, 'db'>;
  imports: ImportRepository;
  waiter: StageWaiter;
  leases: LeaseManager;
  logger: Logger;
  leaseTtlMs: number;
  /** How a step (a commit, a job's write) retries a transient failure: the import's retry settings. */
  retry: ImportRetry;
  /** A paced client for a run of `record` (its credentials resolved for its API URL). */
  openClient(record: ImportRecord, concurrency: number, signal: AbortSignal): Promise<GithubClient>;
  /** Told after a batch committed: it may have recorded changes, which the feeds then deliver. */
  onCommitted?: () => void;
}

/** The run cannot write any more: the import was cancelled, another holder took it over, or a new run began. */
export class RunStoppedError extends ForgesyncError {
  constructor(readonly importName: string) {
    super(`import ${importName} stopped: it was cancelled, taken over by another process, or restarted`);
  }
}

/** The counts a client gathered since the last call (what the next guarded write adds to the import's row). */
export function takeCounts(client: GithubClient, taken: RequestCounts): RequestCounts {
  const delta = zeroCounts();
  for (const key of Object.keys(delta) as (keyof RequestCounts)[]) {
    delta[key] = client.counts[key] - taken[key];
    taken[key] = client.counts[key];
  }
  return delta;
}

/** What a RunContext is made of (see the fields of the same names). */
export interface RunContextInput {
  record: ImportRecord;
  db: Kysely<Schema>;
  imports: ImportRepository;
  client: GithubClient;
  lease: Lease;
  logger: Logger;
  signal: AbortSignal;
  hosts: FileHosts;
  concurrency: number;
  /** See RunDeps.retry. */
  retry: ImportRetry;
  /** See RunDeps.onCommitted. */
  onCommitted?: (() => void) | undefined;
  /**
   * The guard each batch writes behind, given the lease's fence: by default
   * the run's (the import runs this run; see ImportRepository.guardStep); a
   * refresh between runs writes behind refreshGuardStep instead.
   */
  guard?: (fence: bigint, hold: 'share' | 'take', now: number) => Compilable;
}

/**
 * What the stages of one coordinator run work with: the import, the
 * database, the paced client, and `commit`, which writes a batch of
 * statements in one transaction behind the import's fenced guard.
 */
export class RunContext {
  readonly #taken = zeroCounts();
  /** The fence this run last stored on the import's row (the claim stored the lease's); a batch under another one takes it. */
  #fenceTaken: bigint | null;
  /** The bytes the run's list walks hold in pages, together (see PageBudget). */
  readonly pages = new PageBudget();

  readonly record: ImportRecord;
  readonly db: Kysely<Schema>;
  readonly imports: ImportRepository;
  readonly client: GithubClient;
  readonly lease: Lease;
  readonly logger: Logger;
  readonly signal: AbortSignal;
  /** Hosts attachments are downloaded from (the API's, the web host, GitHub's attachment hosts). */
  readonly hosts: FileHosts;
  /** Requests one stage may have in flight (the import's concurrency). */
  readonly concurrency: number;
  /** See RunDeps.retry. */
  private readonly retry: ImportRetry;
  /** See RunDeps.onCommitted. */
  private readonly onCommitted: (() => void) | undefined;
  /** See RunContextInput.guard. */
  private readonly guard: (fence: bigint, hold: 'share' | 'take', now: number) => Compilable;

  constructor(input: RunContextInput) {
    this.record = input.record;
    this.db = input.db;
    this.imports = input.imports;
    this.client = input.client;
    this.lease = input.lease;
    this.logger = input.logger;
    this.signal = input.signal;
    this.hosts = input.hosts;
    this.concurrency = input.concurrency;
    this.retry = input.retry;
    this.onCommitted = input.onCommitted;
    this.guard = input.guard ?? ((fence, hold, now) => this.imports.guardStep({ importId: this.importId, run: this.run, fence, hold, now }));
    this.#fenceTaken = input.record.fence;
  }

  get importId(): number {
    return this.record.id;
  }

  get run(): number {
    return this.record.run;
  }

  get importName(): string {
    return this.record.name;
  }

  /** `/repos/{owner}/{repo}`, URL-escaped. */
  get repoPath(): string {
    return `/repos/${encodeURIComponent(this.record.owner)}/${encodeURIComponent(this.record.repo)}`;
  }

  /**
   * Writes `steps` atomically behind the import's guard (its fence, its
   * run, state started), adding the requests made since the last commit.
   * A batch that failed for a transient cause (the pool out of connections,
   * the connection ended, a lock or serialisation failure) is written again
   * after a pause, a few times (see retryTransient).
   * @throws RunStoppedError when the guard refused: stop the run.
   */
  async commit(steps: readonly (Compilable | null)[]): Promise<void> {
    const counts = takeCounts(this.client, this.#taken);
    const rate = this.client.budgets().map((budget) => budget.snapshot());
    const written = await retryTransient(
      () =>
        writeFenced(
          this.lease,
          (fence) => this.#write(fence, steps, counts, rate),
          () => this.imports.storedFence(this.importId),
        ),
      { retry: this.retry, signal: this.signal, logger: this.logger, fields: { import: this.record.name, step: 'commit' } },
    );
    if (written === null) throw new RunStoppedError(this.record.name);
    afterImportWrite();
    this.onCommitted?.();
  }

  /**
   * One try of a batch: the guard, the batch's progress row, its steps, in
   * one transaction. The guard only compares (sharing the import's row with
   * the batches in flight and the jobs) unless the fence must be stored or
   * the batch updates the import's row (see ImportRepository.guardStep).
   */
  async #write(fence: bigint, steps: readonly (Compilable | null)[], counts: RequestCounts, rate: RateBudget[]): Promise<true | null> {
    const now = Date.now();
    const hold = fence !== this.#fenceTaken || steps.some((step) => step !== null && this.imports.updatesImportRow(step)) ? 'take' : 'share';
    const written = await runBatch(
      this.db,
      guardedList({ guards: [this.guard(fence, hold, now)], steps: [this.imports.progressStep(this.importId, now, counts, rate), ...steps] }),
    );
    if (written && hold === 'take') this.#fenceTaken = fence;
    return written;
  }
}
