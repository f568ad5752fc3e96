import { join } from 'node:path';
import type { Registry } from 'prom-client';
import type { GitDataSource } from './http/github-api/git-data/source.js';
import type { SettingValues } from '../config/setting.js';
import type { CredentialStore } from '../credentials/store.js';
import type { EgressPolicy } from '../egress/policy.js';
import type { Job, JobKind, JobTransport } from '../jobs/types.js';
import type { RouteContext } from '../server/module-routes.js';
import type { LeaseManager } from '../leases/manager.js';
import type { Logger } from '../logging/logger.js';
import type { ForgesyncServer } from '../server/app.js';
import type { Database } from '../store/database.js';
import { ImportNameTakenError } from './errors.js';
import { GithubClient } from './github/client.js';
import { TokenBudgets } from './github/pacer.js';
import { importerMetrics, type ImporterMetrics } from './metrics.js';
import { DEFAULT_API_URL, parseProject, validateApiUrl, validateConcurrency, validateImportName } from './names.js';
import { Coordinator, importLeaseKey, type CoordinatorOutcome } from './run/coordinator.js';
import { runWaiting, type RunWaitingOptions } from './run/run-waiting.js';
import { RefreshIntake } from './refresh/intake.js';
import { Refresher } from './refresh/refresher.js';
import type { ProjectDelivery } from '../replication/api.js';
import { jobsAtOnce, ObjectJobs } from './run/object-jobs.js';
import { GitSources, type GitSourceOptions } from './run/sources.js';
import type { importerSettings } from './settings.js';
import { ImportRepository, type ImportRecord } from './store/imports.js';
import { StageWaiter } from './store/jobs.js';
import { importCounts, importStatus, type ImportStatusJson } from './status.js';
import { exportImport, type ExportSummary } from './export/index.js';

/** The job kinds of the importer: an import's coordination, and its per-object jobs. */
export const IMPORT_JOB = 'import';
export const IMPORT_OBJECT_JOB = 'import-object';
/** Refreshes what webhooks named for an import (see refresh/refresher.ts). */
export const IMPORT_REFRESH_JOB = 'import-refresh';

export interface ImportGithubInput {
  /** `owner/repo`. */
  project: string;
  name?: string;
  apiUrl?: string;
  /** Names of credentials bound to the API host (several: several budgets). */
  credentials?: string[];
  concurrency?: number;
}

export interface ImporterOptions {
  /** Told after a batch that may have recorded changes committed (the feeds then deliver them). */
  onChanges?: () => void;
  database: Pick<Database, 'db' | 'dialect'>;
  leases: LeaseManager;
  jobs: Pick<JobTransport, 'enqueue' | 'shared'>;
  logger: Logger;
  metrics: Registry;
  credentials: Pick<CredentialStore, 'tokenFor'>;
  policy: EgressPolicy;
  protocols: ReadonlySet<string>;
  /** Where downloaded attachments live (`<dataDir>/import-files`). */
  filesDir: string;
  leaseTtlMs: number;
  /** How often the scheduler looks for imports due a sync or left by a dead coordinator. */
  tickMs: number;
  settings: SettingValues<typeof importerSettings>;
  /** The git sources of the repository and the wiki (the replication module). */
  sources: GitSourceOptions;
  /** Whether this process runs jobs (a serving process) — if not, a waiting import runs its jobs itself. */
  runsJobs: () => boolean;
  /**
   * How many processes share an import's requests (distributed mode: the
   * live workers, which all take its per-object jobs); unset: this one.
   */
  requestingProcesses?: () => Promise<number>;
  /** Where the GitHub-compatible API reads the imports' git data (their repository mirrors); absent: not served. */
  gitData?: GitDataSource;
}

/**
 * The GitHub importer: imports, their coordinator and per-object jobs, the
 * sync schedule, the imports API and the GitHub-compatible read API. Like
 * replication, every trigger records what is wanted in the database and
 * nudges a job; the coordinator reads the database.
 */
export class Importer {
  readonly imports: ImportRepository;
  readonly jobs: Record<string, JobKind>;
  readonly metrics: ImporterMetrics;
  readonly coordinator: Coordinator;
  readonly #objects: ObjectJobs;
  readonly #refresher: Refresher;
  readonly #intake: RefreshIntake;
  readonly #budgets = new TokenBudgets();
  readonly #sources: GitSources;
  #timer: NodeJS.Timeout | undefined;
  #ticking: Promise<void> | undefined;

  constructor(private readonly options: ImporterOptions) {
    const { database, leases, logger, settings } = options;
    this.imports = new ImportRepository(database);
    const waiter = new StageWaiter(database.db);
    this.metrics = importerMetrics(options.metrics, () => this.imports.list());
    this.#sources = new GitSources(options.sources, (names) => options.credentials.tokenFor(names.credential, names.url).then(() => true, () => false), options.runsJobs);
    // What the coordinator and the per-object jobs share.
    const deps = {
      database,
      imports: this.imports,
      waiter,
      leases,
      logger,
      leaseTtlMs: options.leaseTtlMs,
      retry: { retries: settings.importRetries, baseMs: settings.importRetryBaseMs },
      openClient: (record: ImportRecord, concurrency: number, signal: AbortSignal) => this.#client(record, concurrency, signal),
      ...(options.onChanges ? { onCommitted: options.onChanges } : {}),
    };
    this.#objects = new ObjectJobs({
      ...deps,
      tokens: (record) => this.#tokens(record).then((tokens) => tokens.map((token) => token.token)),
      policy: options.policy,
      filesDir: options.filesDir,
      maxFileBytes: settings.importAttachmentMaxBytes,
      // A process that runs no jobs on an in-process transport would only pile them up: it runs them itself.
      enqueue: (importId, key) =>
        options.runsJobs() || options.jobs.shared ? options.jobs.enqueue({ kind: IMPORT_OBJECT_JOB, key: `${importId}:${key}` }) : Promise.resolve(),
      runsJobs: options.runsJobs,
    });
    const nudgeRefresh = (importId: number) => options.jobs.enqueue({ kind: IMPORT_REFRESH_JOB, key: String(importId) });
    this.#intake = new RefreshIntake(database.db, (importId) => (this.#refresher.notify(importId) ? Promise.resolve() : nudgeRefresh(importId)));
    this.#refresher = new Refresher({
      ...deps,
      policy: options.policy,
      filesDir: options.filesDir,
      maxFileBytes: settings.importAttachmentMaxBytes,
      runCoordinator: (importId, signal) => this.coordinator.run(importId, signal),
      requestSync: async (importId) => {
        const record = await this.imports.findById(importId);
        if (record) await this.requestSync(record.name).catch(() => undefined);
      },
      nudge: nudgeRefresh,
      metrics: this.metrics,
    });
    this.coordinator = new Coordinator({
      ...deps,
      refreshDuring: (ctx) => this.#refresher.during(ctx),
      stallTimeoutMs: settings.importStallTimeoutMs,
      syncIntervalMs: settings.importSyncIntervalMs,
      env: {
        fanOut: (ctx, stage, keys) => this.#objects.fanOut(ctx, stage, keys),
        ensureSources: (ctx, repository) => this.#sources.ensure(ctx.record, repository),
        // The run's record predates the repository stage, which names the sources: read them now.
        waitSources: async (ctx) => this.#sources.wait((await this.imports.findById(ctx.importId)) ?? ctx.record),
        reconcileIntervalMs: settings.importReconcileIntervalMs,
      },
      onFinished: (record, durationMs) => this.#finished(record, durationMs),
    });
    this.jobs = {
      [IMPORT_JOB]: { concurrency: 4, run: (job, signal) => this.#runImport(job, signal) },
      [IMPORT_OBJECT_JOB]: { concurrency: jobsAtOnce(settings.importConcurrency), run: (job, signal) => this.#objects.runJob(job.key, signal) },
      [IMPORT_REFRESH_JOB]: { concurrency: REFRESH_JOBS_AT_ONCE, run: (job, signal) => this.#refresher.run(Number(job.key), signal) },
    };
  }

  async routes(server: ForgesyncServer, context: RouteContext): Promise<void> {
    // Loaded only by a serving process: the CLI's other commands start without the HTTP stack.
    const [{ importRoutes }, { githubApiRoutes }] = await Promise.all([import('./http/routes.js'), import('./http/github-api/index.js')]);
    await server.register(importRoutes(this, context), { prefix: '/api' });
    await server.register(
      githubApiRoutes({ database: this.options.database, tokens: context.tokens, filesDir: this.options.filesDir, publicUrl: context.publicUrl, gitData: this.options.gitData }),
      { prefix: '/github' },
    );
  }

  /**
   * What a distributed worker serves to api processes: the GitHub-compatible
   * API over its own mirrors (an api process forwards a git-data request
   * whole to the worker of the mirror's shard), never forwarding further.
   */
  async shardRoutes(server: ForgesyncServer, context: RouteContext): Promise<void> {
    const { gitData } = this.options;
    if (!gitData) return;
    const { githubApiRoutes } = await import('./http/github-api/index.js');
    const local = { runner: gitData.runner, mirrorOf: gitData.mirrorOf };
    await server.register(
      githubApiRoutes({ database: this.options.database, tokens: context.tokens, filesDir: this.options.filesDir, publicUrl: context.publicUrl, gitData: local }),
      { prefix: '/github' },
    );
  }

  /**
   * The scheduler: syncs finished imports when due, continues started ones
   * whose coordinator died, and resumes those failed for a transient cause
   * when their retry is due.
   */
  start(): void {
    this.#timer ??= setInterval(() => void this.tick(), this.options.tickMs);
    this.#timer.unref();
  }

  async stop(): Promise<void> {
    clearInterval(this.#timer);
    this.#timer = undefined;
    await this.#ticking;
    this.#objects.close();
    this.#refresher.close();
  }

  /** One scheduler pass (also called by tests). */
  tick(): Promise<void> {
    this.#ticking ??= (async () => {
      try {
        const now = Date.now();
        for (const record of await this.imports.dueOrRunning(now)) {
          if (record.state === 'failed' && record.retryAt !== null) {
            // Failed for a transient cause: resumed where it stopped (not a new sync run), at its retry time.
            if (record.retryAt > now || !(await this.imports.retry(record.id, now))) continue;
            this.options.logger.info(
              { event: 'import_retry', import: record.name, stage: record.stage, transient_failures: record.transientFailures },
              `import ${record.name} failed for a transient cause; resuming it at stage ${record.stage}`,
            );
            await this.#nudge(record.id);
          } else if (record.state === 'synced' || record.state === 'failed') {
            await this.imports.requestSync(record.name);
            await this.#nudge(record.id);
          } else if (!(await this.options.leases.inspect(importLeaseKey(record.name)))) {
            await this.#nudge(record.id);
          }
        }
        await this.#refresher.sweep();
      } catch (error) {
        this.options.logger.warn({ event: 'import_scheduler_failed', err: String(error) }, 'the import scheduler pass failed; retrying next tick');
      } finally {
        this.#ticking = undefined;
      }
    })();
    return this.#ticking;
  }

  /**
   * Records an import of `owner/repo` (checking its name, API URL and
   * credentials first) and nudges a worker. Importing a project again under
   * its name requests a resume (and a second coordinator skips if one runs).
   * @throws InvalidImportInputError, ImportNameTakenError, CredentialUnavailableError, EgressRefusedError
   */
  async create(input: ImportGithubInput): Promise<ImportRecord> {
    const { owner, repo } = parseProject(input.project);
    const name = validateImportName(input.name ?? repo);
    const apiUrl = validateApiUrl(input.apiUrl ?? DEFAULT_API_URL, this.options.protocols, this.options.policy);
    const credentials = [...new Set(input.credentials ?? [])];
    for (const credential of credentials) await this.options.credentials.tokenFor(credential, apiUrl);
    const concurrency = validateConcurrency(input.concurrency ?? this.options.settings.importConcurrency);
    const existing = await this.imports.find(name);
    let record: ImportRecord;
    if (existing) {
      if (existing.owner.toLowerCase() !== owner.toLowerCase() || existing.repo.toLowerCase() !== repo.toLowerCase() || existing.apiUrl !== apiUrl) {
        throw new ImportNameTakenError(name, `${existing.owner}/${existing.repo} from ${existing.apiUrl}`);
      }
      record = existing.state === 'synced' ? existing : await this.imports.resume(name);
    } else {
      record = await this.imports.create({ name, owner, repo, apiUrl, credentials, concurrency, intervalMs: this.options.settings.importSyncIntervalMs });
    }
    await this.#nudge(record.id);
    return record;
  }

  get(name: string): Promise<ImportRecord> {
    return this.imports.get(name);
  }

  list(): Promise<ImportRecord[]> {
    return this.imports.list();
  }

  /** The status JSON of an import (a contract: see ImportStatusJson). */
  async status(nameOrRecord: string | ImportRecord): Promise<ImportStatusJson> {
    const record = typeof nameOrRecord === 'string' ? await this.imports.get(nameOrRecord) : nameOrRecord;
    return importStatus(this.options.database.db, record, (name) => this.options.sources.status(name));
  }

  /** Requests an incremental sync and nudges a worker. */
  async requestSync(name: string): Promise<ImportRecord> {
    const record = await this.imports.requestSync(name);
    await this.#nudge(record.id);
    return record;
  }

  /** Continues a failed, cancelled or interrupted import where it stopped. */
  async resume(name: string): Promise<ImportRecord> {
    const record = await this.imports.resume(name);
    await this.#nudge(record.id);
    return record;
  }

  cancel(name: string): Promise<ImportRecord> {
    return this.imports.cancel(name);
  }

  /**
   * Writes the import as a GitHub migration archive into `to`, the git
   * repositories copied from their mirrors (`copyMirror` copies a bare
   * repository under the source's lease).
   */
  async export(name: string, to: string): Promise<ExportSummary> {
    const record = await this.imports.get(name);
    return exportImport({
      database: this.options.database,
      filesDir: this.options.filesDir,
      name: record.name,
      to,
      copyRepository: (which, dest) => {
        const source = which === 'repository' ? record.repositorySource : record.wikiSource;
        return source ? this.options.sources.copyMirror(source, dest) : Promise.resolve(false);
      },
    });
  }

  /** Runs the import's coordinator here, then returns the import as it ended ('skipped' when another process holds its lease). */
  async runHere(name: string, signal?: AbortSignal): Promise<{ outcome: CoordinatorOutcome; record: ImportRecord }> {
    const record = await this.imports.get(name);
    const outcome = await this.coordinator.run(record.id, signal);
    return { outcome, record: await this.imports.get(name) };
  }

  /** What `--wait` does (see runWaiting): runs the import here, waiting for another holder of its lease to let go. */
  runHereWaiting(name: string, options: RunWaitingOptions): Promise<{ outcome: CoordinatorOutcome; record: ImportRecord }> {
    return runWaiting({ leases: this.options.leases, runHere: (n, signal) => this.runHere(n, signal), get: (n) => this.imports.get(n) }, name, options);
  }

  /**
   * Records what a GitHub project delivery names for every import of its
   * repository, durably, and nudges their refreshes (see refresh/); returns
   * the imports' names. Replication's webhook receiver calls it.
   */
  receiveDelivery(delivery: ProjectDelivery): Promise<string[]> {
    return this.#intake.receive(delivery);
  }

  async #runImport(job: Job, signal: AbortSignal): Promise<void> {
    // Refreshes that came as the run ended wait for the refresh job (the run's own refreshing stopped with it).
    await this.coordinator.run(Number(job.key), signal);
    await this.options.jobs.enqueue({ kind: IMPORT_REFRESH_JOB, key: job.key });
  }

  #nudge(importId: number): Promise<void> {
    return this.options.jobs.enqueue({ kind: IMPORT_JOB, key: String(importId) });
  }

  /** The tokens of an import's credentials for its API URL (never stored: resolved at each run). */
  async #tokens(record: ImportRecord) {
    return Promise.all(record.credentials.map(async (credential) => ({ credential, token: await this.options.credentials.tokenFor(credential, record.apiUrl) })));
  }

  /**
   * A client for `record`'s requests in this process. An import's
   * concurrency is what it has in flight in all: with several processes
   * requesting for it, each gets its share (rounded up), not the whole, so
   * that more workers do not mean more requests in flight at GitHub (its
   * secondary limit counts them together), and a worker that dies or
   * stops loses at most its share of answers.
   */
  async #client(record: ImportRecord, concurrency: number, signal: AbortSignal): Promise<GithubClient> {
    const { settings } = this.options;
    const processes = Math.max(1, (await this.options.requestingProcesses?.().catch(() => 1)) ?? 1);
    return new GithubClient({
      apiUrl: record.apiUrl,
      tokens: await this.#tokens(record),
      budgets: this.#budgets,
      concurrency: Math.ceil(concurrency / processes),
      policy: this.options.policy,
      retries: settings.importRetries,
      retryBaseMs: settings.importRetryBaseMs,
      signal,
      onAnswer: (result) => this.metrics.requests.inc({ result }),
      onRateLimitWait: (ms) => this.metrics.rateLimitWait.inc(ms / 1000),
    });
  }

  /** The final log line of a run (the seed's shape), and the objects metric. */
  async #finished(record: ImportRecord, durationMs: number): Promise<void> {
    const counts = await importCounts(this.options.database.db, record, record.mode === 'sync' ? record.run : undefined);
    for (const kind of ['fetched', 'imported'] as const) {
      for (const [type, n] of Object.entries(counts[kind])) if (n > 0) this.metrics.objects.inc({ type, kind }, n);
    }
    this.options.logger.info(
      {
        message: 'GitHub project import finished',
        import: record.name,
        project: `${record.owner}/${record.repo}`,
        mode: record.mode,
        run: record.run,
        duration_s: Math.round(durationMs / 100) / 10,
        objects_imported: counts,
      },
      'GitHub project import finished',
    );
  }
}

/** Imports refreshed at once in one process: each a drain that mostly waits (a burst settling, GitHub answering), so many go side by side. */
const REFRESH_JOBS_AT_ONCE = 64;

/** `<dataDir>/import-files`: attachments, stored once per content. */
export const importFilesDir = (dataDir: string) => join(dataDir, 'import-files');
