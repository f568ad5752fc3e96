import { sql } from 'kysely';
import type { ForgesyncConfig } from '../config/config.js';
import { parseProtocols, urlHost, validateRemoteUrl } from '../git/url.js';
import { GitRunner } from '../git/runner.js';
import { removeMirror } from '../git/mirror.js';
import { InProcessTransport } from '../jobs/in-process.js';
import type { JobTransport, SyncTrigger } from '../jobs/transport.js';
import { openLeaseManager } from '../leases/open.js';
import type { LeaseManager } from '../leases/manager.js';
import { createLogger, type Logger } from '../logging/logger.js';
import { Metrics } from '../metrics/metrics.js';
import { CredentialResolver, validateCredentialRef } from '../replication/credentials.js';
import { nameFromUrl, validateSourceName } from '../replication/names.js';
import { parseCron, parseInterval } from '../replication/schedule.js';
import { Scheduler } from '../replication/scheduler.js';
import { SyncService, syncLeaseKey, type SyncOutcome } from '../replication/sync.js';
import { Verifier } from '../replication/verify.js';
import { Snapshots, type OpenSnapshotOptions } from '../snapshots/service.js';
import type { Snapshot } from '../snapshots/snapshot.js';
import type { TreeEntry } from '../git/cat-file.js';
import { mirrorPathFor } from '../git/storage.js';
import { openDatabase, type Database } from '../store/database.js';
import type { MatchedRequest } from '../store/match-requests.js';
import { RegistryRepository } from '../store/registry.js';
import { SourceRepository } from '../store/sources.js';
import { SourceNotFoundError } from '../store/errors.js';
import type { RegistryState, Source, SourceWithRegistry } from '../store/types.js';

export interface AddSourceInput {
  url: string;
  name?: string;
  /** Interval like `1h`; default: the configured sync interval. */
  interval?: string;
  /** Cron expression, instead of an interval. */
  cron?: string;
  /** Credential reference (`env:NAME`, `file:/path`, or a secrets-file name); never the secret. */
  credentialRef?: string;
}

/** Resync selection: one name, or every failed row, or all rows, or rows in a state. */
export type ResyncTarget = { name: string } | 'failed' | 'all' | { state: RegistryState };

// Cron sources are looked at every minute; the cron expression decides when they run.
const CRON_CHECK_INTERVAL_MS = 60_000;

/**
 * One forgesync instance: registry, leases, git, sync workers and the
 * scheduler, wired from the configuration. The CLI, the server and library
 * users all go through this.
 */
export class Forgesync {
  readonly sources: SourceRepository;
  readonly registry: RegistryRepository;
  readonly runner: GitRunner;
  readonly transport: JobTransport;
  readonly syncService: SyncService;
  readonly scheduler: Scheduler;
  readonly verifier: Verifier;
  /** Created on first use: CLI commands never collect metrics, only a serving process does. */
  #metrics: Metrics | undefined;
  #snapshots: Snapshots | undefined;
  readonly #credentials: CredentialResolver;
  readonly #protocols: ReadonlySet<string>;

  private constructor(
    readonly config: ForgesyncConfig,
    readonly database: Database,
    readonly leases: LeaseManager,
    readonly logger: Logger,
    onProgress?: (source: Source, line: string) => void,
  ) {
    this.#protocols = parseProtocols(config.gitProtocols);
    this.sources = new SourceRepository(database);
    this.registry = new RegistryRepository(database);
    this.runner = new GitRunner({ protocols: this.#protocols });
    this.#credentials = new CredentialResolver(process.env, config.secretsFile);
    this.transport = new InProcessTransport({
      capacity: config.maxConcurrentSyncs,
      onError: (error, job) => logger.error({ event: 'job_error', source_id: job.sourceId, err: String(error) }, 'sync job failed'),
    });
    this.syncService = new SyncService({
      sources: this.sources,
      registry: this.registry,
      leases,
      runner: this.runner,
      credentials: this.#credentials,
      logger,
      storage: config.mirrorsDir,
      leaseTtlMs: config.leaseTtlMs,
      backoff: { baseMs: config.retryBaseMs, maxMs: config.retryMaxMs },
      onPending: (source) => void this.#nudge(source, 'retry'),
      onAttempt: ({ trigger, result, durationMs }) => {
        this.#metrics?.syncs.inc({ result, trigger });
        this.#metrics?.syncDuration.observe(durationMs / 1000);
      },
      onSkip: () => this.#metrics?.leaseSkips.inc(),
      ...(onProgress ? { onProgress } : {}),
    });
    this.scheduler = new Scheduler({
      registry: this.registry,
      leases,
      transport: this.transport,
      logger,
      tickMs: config.schedulerTickMs,
      defaultIntervalMs: config.syncIntervalMs,
      leaseTtlMs: config.leaseTtlMs,
      verifyIntervalMs: config.verifyIntervalMs,
    });
    this.verifier = new Verifier({ registry: this.registry, leases, runner: this.runner, logger, leaseTtlMs: config.leaseTtlMs });
  }

  /** Prometheus metrics of this instance (process defaults included). */
  get metrics(): Metrics {
    this.#metrics ??= new Metrics(() => this.registry.counts());
    return this.#metrics;
  }

  /** Snapshots and object reads of this instance, created on first use. */
  get snapshots(): Snapshots {
    this.#snapshots ??= new Snapshots({
      root: this.config.snapshotsDir,
      mirrorsDir: this.config.mirrorsDir,
      runner: this.runner,
      leases: this.leases,
      logger: this.logger,
      leaseTtlMs: this.config.leaseTtlMs,
      maxCount: this.config.snapshotMaxCount,
      maxBytes: this.config.snapshotMaxBytes,
      getSource: (name) => this.getSource(name),
      serveSyncRequest: (name, timeoutMs) => this.serveSyncRequest(name, { trigger: 'library', timeoutMs, pollMs: 100 }),
      tokenOf: (source) => this.#credentials.resolve(source.credentialRef),
    });
    return this.#snapshots;
  }

  /**
   * A held, read-only directory of exactly the commit `ref` (branch, tag or
   * sha) of source `name` names; release it when done. See {@link Snapshots.open}.
   */
  async openSnapshot(name: string, ref: string, options: OpenSnapshotOptions = {}): Promise<Snapshot> {
    return await this.snapshots.open(name, ref, options);
  }

  /** The content of `path` at commit (or ref) `sha` of source `name`, read from the mirror without materialising. */
  async readFileAt(name: string, sha: string, path: string): Promise<Buffer> {
    return await this.snapshots.readFileAt(name, sha, path);
  }

  /** The entries of directory `path` ('' for the root) at commit (or ref) `sha` of source `name`. */
  async listTree(name: string, sha: string, path = ''): Promise<TreeEntry[]> {
    return await this.snapshots.listTree(name, sha, path);
  }

  /** Opens the registry database (running migrations) and the lease backend. */
  static async open(
    config: ForgesyncConfig,
    options: { logger?: Logger; onProgress?: (source: Source, line: string) => void } = {},
  ): Promise<Forgesync> {
    const logger = options.logger ?? createLogger();
    const database = await openDatabase(config.databaseUrl);
    try {
      const leases = await openLeaseManager(config.leaseUrl);
      return new Forgesync(config, database, leases, logger, options.onProgress);
    } catch (error) {
      await database.close();
      throw error;
    }
  }

  /** Registers an upstream; its first sync is requested at once. */
  async addSource(input: AddSourceInput): Promise<SourceWithRegistry> {
    const url = validateRemoteUrl(input.url, this.#protocols);
    const name = validateSourceName(input.name ?? nameFromUrl(url));
    const cron = input.cron ? parseCron(input.cron) : null;
    const intervalMs = cron ? CRON_CHECK_INTERVAL_MS : input.interval ? parseInterval(input.interval) : null;
    const credentialRef = input.credentialRef ? validateCredentialRef(input.credentialRef) : null;
    const source = await this.sources.create({ name, url, credentialRef, intervalMs, cron });
    await this.#nudge(source, 'manual');
    return source;
  }

  /** Changes a source's URL or schedule; a URL change re-clones on the next sync. */
  async updateSource(name: string, patch: Omit<Partial<AddSourceInput>, 'name'> & { enabled?: boolean }): Promise<SourceWithRegistry> {
    const source = await this.getSource(name);
    const cron = patch.cron ? parseCron(patch.cron) : undefined;
    const updated = await this.sources.update(source.name, {
      ...(patch.url !== undefined ? { url: validateRemoteUrl(patch.url, this.#protocols) } : {}),
      ...(cron ? { cron, intervalMs: CRON_CHECK_INTERVAL_MS } : {}),
      ...(patch.interval ? { intervalMs: parseInterval(patch.interval), cron: null } : {}),
      ...(patch.credentialRef !== undefined ? { credentialRef: patch.credentialRef ? validateCredentialRef(patch.credentialRef) : null } : {}),
      ...(patch.enabled !== undefined ? { enabled: patch.enabled } : {}),
    });
    await this.#nudge(updated, 'manual');
    return updated;
  }

  /** Removes a source and deletes its mirror, under the source's lease so no sync runs meanwhile. */
  async removeSource(name: string, options: { waitMs?: number } = {}): Promise<void> {
    const source = await this.getSource(name);
    await this.leases.withLease(
      syncLeaseKey(source.id),
      { ttlMs: this.config.leaseTtlMs, owner: `remove ${source.name}`.slice(0, 128), waitMs: options.waitMs ?? 30_000, retryMs: 200 },
      async () => {
        this.#snapshots?.objects.forget(mirrorPathFor(this.config.mirrorsDir, source.name, source.url));
        await removeMirror(this.config.mirrorsDir, source.name, source.url);
        await this.sources.remove(source.name);
      },
    );
    this.logger.info({ event: 'source_removed', source: source.name }, `removed ${source.name}`);
  }

  async getSource(name: string): Promise<SourceWithRegistry> {
    const source = await this.sources.get(name);
    if (!source) throw new SourceNotFoundError(name);
    return source;
  }

  /** Records a sync request and nudges a worker; returns the request's sequence number. */
  async requestSync(name: string, trigger: SyncTrigger = 'library'): Promise<number> {
    const source = await this.getSource(name);
    const seq = await this.registry.request(source.id, trigger);
    await this.#nudge(source, trigger);
    return seq;
  }

  /**
   * Records a sync request for a source the caller already looked up (the
   * webhook receivers: no second lookup by name) and nudges a worker.
   * @returns the new requested_seq.
   * @throws SourceNotFoundError when the source was removed meanwhile.
   */
  async requestSyncOf(source: Source, trigger: SyncTrigger): Promise<number> {
    const seq = await this.registry.request(source.id, trigger);
    await this.#nudge(source, trigger);
    return seq;
  }

  /**
   * Records a sync request for every enabled source whose URL has one of the
   * match `keys` (store/match-key.ts) in one statement, and nudges a worker
   * for each: the webhook hot path. Returns those sources (none: nothing recorded).
   */
  async requestSyncByMatchKeys(keys: readonly string[], trigger: SyncTrigger): Promise<MatchedRequest[]> {
    const matched = await this.registry.requestByMatchKeys(keys);
    for (const source of matched) await this.transport.enqueue({ sourceId: source.sourceId, trigger, host: urlHost(source.url) });
    return matched;
  }

  /** Requests a sync of every row the target selects; returns how many rows it touched. */
  async resync(target: ResyncTarget, trigger: SyncTrigger = 'manual'): Promise<number> {
    if (typeof target === 'object' && 'name' in target) {
      await this.requestSync(target.name, trigger);
      return 1;
    }
    const count = await this.registry.requestMany(target);
    if (count > 0) void this.scheduler.tick().catch(() => undefined);
    return count;
  }

  /**
   * Runs the sync of `name` in this process until the request recorded now
   * is served (the CLI's `sync --wait`): if another process holds the lease,
   * waits for it to serve the request instead of fetching twice.
   */
  async syncAndWait(name: string, options: { trigger?: SyncTrigger; timeoutMs?: number; pollMs?: number } = {}): Promise<SourceWithRegistry> {
    const { source } = await this.serveSyncRequest(name, {
      trigger: options.trigger ?? 'cli',
      timeoutMs: options.timeoutMs ?? 10 * 60_000,
      pollMs: options.pollMs ?? 250,
    });
    return source;
  }

  /**
   * Records a sync request for `name` and serves it: here when the lease is
   * free, else by waiting for the holder (requests arriving during a sync are
   * served by another round). Stops at a failure or after `timeoutMs`.
   * @returns the source as it then is; `served` when a successful sync covered the request.
   */
  async serveSyncRequest(
    name: string,
    options: { trigger: SyncTrigger; timeoutMs: number; pollMs: number },
  ): Promise<{ source: SourceWithRegistry; served: boolean }> {
    const source = await this.getSource(name);
    const seq = await this.registry.request(source.id, options.trigger);
    const deadline = Date.now() + options.timeoutMs;
    for (;;) {
      const outcome: SyncOutcome = await this.syncService.sync(source.id, options.trigger);
      const current = await this.getSource(name);
      const { completedSeq, state } = current.registry;
      if (completedSeq >= seq || state === 'failed') return { source: current, served: completedSeq >= seq && state === 'synced' };
      if (outcome === 'gone') throw new SourceNotFoundError(name);
      const left = deadline - Date.now();
      if (left <= 0) return { source: current, served: false };
      await new Promise((resolve) => setTimeout(resolve, Math.min(options.pollMs, left)));
    }
  }

  /** Throws when the registry database does not answer. */
  async ping(): Promise<void> {
    await sql`select 1`.execute(this.database.db);
  }

  /** Starts workers and the scheduler (what `forgesync serve` runs). */
  startService(): void {
    this.transport.start(async (job, signal) => {
      if (job.trigger !== 'verify') await this.syncService.sync(job.sourceId, job.trigger, signal);
      else if ((await this.verifier.verify(job.sourceId)) === 'mismatch') await this.syncService.sync(job.sourceId, 'verify', signal);
    });
    this.scheduler.start();
  }

  /** Stops the scheduler and workers (running git is killed, rows left pending), then disconnects. */
  async close(): Promise<void> {
    await this.scheduler.stop();
    await this.transport.stop();
    await this.#snapshots?.close();
    await this.leases.close();
    await this.database.close();
  }

  async #nudge(source: Source, trigger: SyncTrigger): Promise<void> {
    await this.transport.enqueue({ sourceId: source.id, trigger, host: urlHost(source.url) });
  }
}
