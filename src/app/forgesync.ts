import { pickSettings } from '../config/setting.js';
import type { TreeEntry } from '../git/cat-file.js';
import { EgressPolicy } from '../egress/policy.js';
import { GitRunner } from '../git/runner.js';
import { parseProtocols } from '../git/url.js';
import { Kernel } from '../kernel/kernel.js';
import { createLogger, type Logger } from '../logging/logger.js';
import { CredentialStore } from '../credentials/store.js';
import { Replication, type AddSourceInput, type ResyncTarget, type SyncWaitResult } from '../replication/module.js';
import { replicationSettings } from '../replication/settings.js';
import { Snapshots, type OpenSnapshotOptions } from '../snapshots/service.js';
import { Importer, importFilesDir } from '../importer/module.js';
import { importerSettings } from '../importer/settings.js';
import { Feeds } from '../feeds/module.js';
import { feedSettings } from '../feeds/settings.js';
import { localRefs, readRefFiles } from '../git/refs.js';
import type { Snapshot } from '../snapshots/snapshot.js';
import type { SourceFilter } from '../replication/store/sources.js';
import type { Source, SourceWithRegistry, SyncTrigger } from '../store/types.js';
import { ShardMembership } from '../cluster/membership.js';
import type { InternalServer } from '../cluster/internal-server.js';
import { ShardReads } from '../cluster/forward.js';
import { MovesNeedRoutedJobsError } from '../cluster/errors.js';
import { requireSharedBackends } from '../cluster/preflight.js';
import { ShardRepository } from '../cluster/store/shards.js';
import { parseRoles, type Roles } from '../cluster/roles.js';
import { serverPathsOf, type ForgesyncConfig } from './config.js';
import type { ServerPaths } from '../util/server-paths.js';

export type { AddSourceInput, ResyncTarget, SyncWaitResult };

export interface OpenOptions {
  logger?: Logger;
  /** Receives git's progress lines (clone/fetch), e.g. to draw them on a terminal. */
  onProgress?: (source: Source, line: string) => void;
}

/**
 * One forgesync instance: the kernel (database, leases, job transport,
 * logger, metrics) and the capability modules on it, each created here from
 * the few things it needs. The CLI, the server and library users all open
 * one; its methods are the library API, each a thin delegation to the
 * module that does the work.
 */
export class Forgesync {
  #membership: ShardMembership | undefined;
  #serverPaths: ServerPaths | undefined;
  #internalServer: InternalServer | undefined;

  private constructor(
    readonly config: ForgesyncConfig,
    readonly kernel: Kernel,
    /** The one hardened git runner every module runs git through. */
    readonly runner: GitRunner,
    readonly replication: Replication,
    readonly snapshots: Snapshots,
    readonly importer: Importer,
    readonly feeds: Feeds,
    /** The storage shards and where sources are placed. */
    readonly shards: ShardRepository,
  ) {}

  /** Opens the registry database (running migrations), the lease backend, the job transport and every module. */
  static async open(config: ForgesyncConfig, options: OpenOptions = {}): Promise<Forgesync> {
    const logger = options.logger ?? createLogger(config.logLevel ? { level: config.logLevel } : {});
    const kernel = await Kernel.open({ ...config, logger });
    try {
      const protocols = parseProtocols(config.gitProtocols);
      // Every outbound connection passes this policy; modules get it through the runner (runner.egress).
      const egress = new EgressPolicy({ allowNetworks: config.allowNetworks ?? [] });
      const runner = new GitRunner({
        protocols,
        egress,
        dataDir: config.dataDir,
        ...(config.sshKeyFile !== undefined ? { sshKeyFile: config.sshKeyFile } : {}),
        sshAgent: config.sshAgent,
      });
      const credentials = new CredentialStore({ secretsFile: config.secretsFile, logger, protocols });
      const { database, leases, jobs, metrics } = kernel;
      let snapshots: Snapshots | undefined;
      let feeds: Feeds | undefined;
      // A worker heartbeats every third of the lease ttl; six missed beats (a busy registry can delay a few) and its shard is down.
      const shards = new ShardRepository(database.db, 2 * config.leaseTtlMs);
      const replication = kernel.use(
        new Replication({
          database,
          leases,
          jobs,
          logger,
          metrics,
          runner,
          credentials,
          protocols,
          mirrorsDir: config.mirrorsDir,
          leaseTtlMs: config.leaseTtlMs,
          settings: pickSettings(replicationSettings, config),
          ...(options.onProgress ? { onProgress: options.onProgress } : {}),
          onMirrorRemoved: (path) => snapshots?.objects.forget(path),
          onChanges: () => feeds?.nudge(),
          placeSource: (name) => shards.choose(name),
          // Placement is enforced where jobs are routed by shard; in-process jobs sync every source here.
          ...(config.jobsUrl !== undefined ? { localShard: config.shardId, liveShards: () => shards.live() } : {}),
        }),
      );
      snapshots = kernel.use(
        new Snapshots({
          root: config.snapshotsDir,
          mirrorsDir: config.mirrorsDir,
          runner,
          leases,
          logger,
          leaseTtlMs: config.leaseTtlMs,
          maxCount: config.snapshotMaxCount,
          maxBytes: config.snapshotMaxBytes,
          defaultHoldMs: config.snapshotHoldMs,
          apiMaxHoldMs: config.snapshotApiMaxHoldMs,
          getSource: (name) => replication.getSource(name),
          sync: (name, timeoutMs) => replication.sync(name, { trigger: 'library', timeoutMs }),
          tokenOf: async (source) => (source.credentialRef ? await credentials.tokenFor(source.credentialRef, source.url) : undefined),
        }),
      );
      const importer = kernel.use(
        new Importer({
          database,
          leases,
          jobs,
          logger,
          metrics,
          credentials,
          policy: egress,
          protocols,
          filesDir: importFilesDir(config.dataDir),
          leaseTtlMs: config.leaseTtlMs,
          tickMs: Math.max(config.schedulerTickMs, 1000),
          settings: pickSettings(importerSettings, config),
          runsJobs: () => kernel.started,
          onChanges: () => feeds?.nudge(),
          // Every live worker takes an import's per-object jobs where jobs are shared.
          ...(config.jobsUrl !== undefined ? { requestingProcesses: async () => (await shards.live()).length } : {}),
          sources: {
            find: (name) => replication.sources.find(name),
            add: async ({ name, url, credential }) => {
              await replication.addSource({ name, url, ...(credential ? { credentialRef: credential } : {}) });
            },
            requestSync: async (name, url) => {
              const source = await replication.getSource(name);
              if (source.url !== url) await replication.updateSource(name, { url });
              else await replication.requestSync(name, { trigger: 'library' });
            },
            sync: async (name) => {
              await replication.sync(name, { trigger: 'library', timeoutMs: 10 * 60_000 }).catch(() => undefined);
            },
            copyMirror: (name, dest) => replication.copyMirror(name, dest),
            status: async (name) => {
              const source = await replication.sources.find(name);
              return source ? { name: source.name, state: source.registry.state, lastSyncedAt: source.registry.lastSyncedAt?.toISOString() ?? null } : null;
            },
          },
        }),
      );
      feeds = kernel.use(
        new Feeds({
          database,
          leases,
          jobs,
          logger,
          metrics,
          policy: egress,
          secrets: credentials,
          leaseTtlMs: config.leaseTtlMs,
          settings: pickSettings(feedSettings, config),
          runsJobs: () => kernel.started,
          readRefs: async (mirrorPath) => readRefFiles(mirrorPath) ?? (await localRefs(runner, mirrorPath)),
        }),
      );
      return new Forgesync(config, kernel, runner, replication, snapshots, importer, feeds, shards);
    } catch (error) {
      await kernel.close();
      throw error;
    }
  }

  get logger(): Logger {
    return this.kernel.logger;
  }

  /** This process's directories, which HTTP answers name by placeholders (`<mirrors>/x.git`) instead. */
  get serverPaths(): ServerPaths {
    return (this.#serverPaths ??= serverPathsOf(this.config));
  }

  /** Registers an upstream; its first sync is requested at once. */
  addSource(input: AddSourceInput): Promise<SourceWithRegistry> {
    return this.replication.addSource(input);
  }

  /** Changes a source's URL, schedule, credential reference or enabled flag; a URL change re-clones on the next sync. */
  updateSource(name: string, patch: Omit<Partial<AddSourceInput>, 'name'> & { enabled?: boolean }): Promise<SourceWithRegistry> {
    return this.replication.updateSource(name, patch);
  }

  /** Removes a source and deletes its mirror, under the source's lease so no sync runs meanwhile. */
  removeSource(name: string, options: { waitMs?: number } = {}): Promise<void> {
    return this.replication.removeSource(name, options);
  }

  /** @throws SourceNotFoundError */
  getSource(name: string): Promise<SourceWithRegistry> {
    return this.replication.getSource(name);
  }

  /** Sources sorted by name, optionally filtered by registry state and a search string. */
  listSources(filter: SourceFilter = {}): Promise<SourceWithRegistry[]> {
    return this.replication.listSources(filter);
  }

  /** Records a sync request and nudges a worker; returns the request's sequence number. */
  requestSync(name: string, options: { trigger?: SyncTrigger } = {}): Promise<number> {
    return this.replication.requestSync(name, { trigger: options.trigger ?? 'library' });
  }

  /** Records a sync request on every row the target selects; returns how many rows it touched. */
  requestSyncMany(target: ResyncTarget, options: { trigger?: SyncTrigger } = {}): Promise<number> {
    return this.replication.requestSyncMany(target, { trigger: options.trigger ?? 'manual' });
  }

  /**
   * Records a sync request and serves it, here or by waiting for the process
   * that holds the source's lease; resolves as soon as a successful round
   * served it (`served: true`), whoever ran that round, or when that round
   * failed or `timeoutMs` passed (`served: false`).
   */
  sync(name: string, options: { trigger?: SyncTrigger; timeoutMs?: number; pollMs?: number } = {}): Promise<SyncWaitResult> {
    return this.replication.sync(name, { trigger: 'cli', ...options });
  }

  /**
   * A held, read-only directory of exactly the commit `ref` (branch, tag or
   * sha) of source `name` names; release it when done. See {@link Snapshots.open}.
   */
  openSnapshot(name: string, ref: string, options: OpenSnapshotOptions = {}): Promise<Snapshot> {
    return this.snapshots.open(name, ref, options);
  }

  /** The content of `path` at commit (or ref) `sha` of source `name`, read from the mirror without materialising. */
  readFileAt(name: string, sha: string, path: string): Promise<Buffer> {
    return this.snapshots.readFileAt(name, sha, path);
  }

  /** The entries of directory `path` ('' for the root) at commit (or ref) `sha` of source `name`. */
  listTree(name: string, sha: string, path = ''): Promise<TreeEntry[]> {
    return this.snapshots.listTree(name, sha, path);
  }

  /**
   * Moves source `name` to shard `shard`: a worker of that shard syncs it
   * (from upstream, under the source's lease), then places it there under a
   * new epoch in the same write; the old shard's writes are refused from then
   * on. Resolves once the move is requested; false when it is there already.
   * @throws SourceNotFoundError, ShardNotFoundError, ShardUnavailableError
   */
  async reassignSource(name: string, shard: string): Promise<boolean> {
    this.#requireRoutedJobs();
    const source = await this.replication.getSource(name);
    const moving = await this.shards.requestMove(source.id, shard);
    if (moving) await this.replication.requestSyncByIds([source.id], { trigger: 'manual' });
    return moving;
  }

  /**
   * Moves every source off shard `id` (marked draining: it takes no new
   * ones); with `wait`, resolves when none is left on it (or rejects after
   * `timeoutMs`). Returns how many were asked to move.
   * @throws ShardNotFoundError, NoOtherShardError
   */
  async drainShard(id: string, options: { wait?: boolean; timeoutMs?: number; pollMs?: number } = {}): Promise<number> {
    this.#requireRoutedJobs();
    const moving = await this.shards.drain(id);
    await this.replication.requestSyncByIds(moving, { trigger: 'manual' });
    const timeoutMs = options.timeoutMs ?? 30 * 60_000;
    const deadline = Date.now() + timeoutMs;
    for (let left = options.wait ? await this.shards.sourcesOn(id) : 0; left > 0; left = await this.shards.sourcesOn(id)) {
      if (Date.now() > deadline) throw new Error(`shard "${id}" still holds ${left} sources after ${timeoutMs} ms; \`forgesync shard list\` shows the progress`);
      await new Promise((resolve) => setTimeout(resolve, options.pollMs ?? 500));
    }
    return moving.length;
  }

  /** Moves are carried out by the target shard's workers: only jobs routed by shard reach them. */
  #requireRoutedJobs(): void {
    if (this.config.jobsUrl === undefined) throw new MovesNeedRoutedJobsError();
  }

  /**
   * Starts what `forgesync serve` runs besides HTTP, for the configured roles
   * (`FORGESYNC_ROLE`, default all): jobs here (worker) and the modules'
   * background work (scheduler). Only some roles need backends the other
   * processes share.
   * @throws SharedBackendsRequiredError
   */
  async startService(roles: Roles = parseRoles(this.config.role)): Promise<void> {
    requireSharedBackends(roles, this.config);
    if (roles.worker && !this.#membership) {
      const { config } = this;
      // Distributed: api processes forward reads of this shard's files here.
      if (config.jobsUrl !== undefined && config.clusterToken !== undefined) {
        const { startInternalServer } = await import('../cluster/internal-server.js');
        this.#internalServer = await startInternalServer({
          token: config.clusterToken,
          listen: config.internalListen,
          ...(config.internalUrl !== undefined ? { advertisedUrl: config.internalUrl } : {}),
          logger: this.logger,
          serverPaths: this.serverPaths,
          routes: (server, context) => this.snapshots.routes(server, context),
        });
      }
      this.#membership = new ShardMembership({
        shards: this.shards,
        shardId: config.shardId,
        dataDir: config.dataDir,
        mirrorsDir: config.mirrorsDir,
        heartbeatMs: Math.max(1000, config.leaseTtlMs / 3),
        logger: this.logger,
        ...(this.#internalServer ? { endpoint: this.#internalServer.url } : {}),
        // Sources move only where jobs are routed by shard (see reassignSource).
        ...(config.jobsUrl !== undefined ? { sweep: () => this.replication.removeMovedCopies(config.shardId, config.movedCopyGraceMs) } : {}),
      });
      // Sources placed now had no shard, so no job: their requests are nudged now.
      await this.replication.nudge(await this.#membership.start());
    }
    await this.kernel.start(roles);
  }

  /**
   * Where reads that need a source's files are answered, in distributed mode
   * (jobs routed by shard); undefined when every source's files are here.
   * `roles` says whether this process has a shard's files (it runs a worker).
   */
  shardReads(roles: Roles = parseRoles(this.config.role)): ShardReads | undefined {
    const { config } = this;
    if (config.jobsUrl === undefined) return undefined;
    return new ShardReads({
      shards: this.shards,
      localShard: roles.worker ? config.shardId : null,
      clusterToken: config.clusterToken,
      shardOf: async (name) => (await this.replication.getSource(name)).shard,
    });
  }

  /** Stops the scheduler and the jobs (running git is killed, rows left pending), then disconnects. */
  async close(): Promise<void> {
    await this.#membership?.stop();
    await this.#internalServer?.close();
    await this.kernel.close();
  }
}
