import type { Registry } from 'prom-client';
import type { Logger } from '../logging/logger.js';
import type { KernelConfig } from '../module/definition.js';
import type { ReplicationApi, SourcePlacement } from '../replication/api.js';
import type { RouteContext } from '../server/module-routes.js';
import type { ForgesyncServer } from '../server/app.js';
import type { ServerPaths } from '../util/server-paths.js';
import { DrainTimeoutError, MovesNeedRoutedJobsError } from './errors.js';
import { ShardReads } from './forward.js';
import type { InternalServer } from './internal-server.js';
import { ShardMembership } from './membership.js';
import { shardMetrics } from './metrics.js';
import { parseRoles, type Roles } from './roles.js';
import type { clusterSettings } from './settings.js';
import { ShardRepository, type ShardInfo } from './store/shards.js';
import type { SettingValues } from '../config/setting.js';
import type { Database } from '../store/database.js';

export interface ClusterOptions {
  database: Pick<Database, 'db'>;
  config: KernelConfig;
  settings: SettingValues<typeof clusterSettings>;
  logger: Logger;
  /** This instance's Prometheus registry: the shards' gauges go there, and a worker's internal endpoint serves it on /metrics. */
  metrics: Registry;
  /** The sources (opened after the cluster, which places them: used only once everything is open). */
  replication: () => ReplicationApi;
}

/** What a worker's join serves and reports: its routes for api processes, and its directories hidden in their answers. */
export interface JoinOptions {
  shardRoutes: readonly ((server: ForgesyncServer, context: RouteContext) => Promise<void>)[];
  serverPaths: ServerPaths;
}

/**
 * Distributed mode: the storage shards, where sources are placed, moving
 * them between shards, a worker's membership of its shard (heartbeat,
 * janitor, the internal endpoint api processes forward file reads to) and
 * those forwarded reads. With in-process jobs there is one shard's worth of
 * everything here: sources are placed but every one is synced locally.
 */
export class Cluster {
  readonly #shards: ShardRepository;
  readonly #roles: Roles;
  #membership: ShardMembership | undefined;
  #internalServer: InternalServer | undefined;
  readonly placement: SourcePlacement;
  /** Where reads that need a source's files are answered, when jobs are routed by shard; undefined when every source's files are here. */
  readonly shardReads: ShardReads | undefined;

  constructor(private readonly options: ClusterOptions) {
    const { config, settings } = options;
    // A worker heartbeats every third of the lease ttl; six missed beats (a busy registry can delay a few) and its shard is down.
    this.#shards = new ShardRepository(options.database.db, 2 * config.leaseTtlMs);
    this.#roles = parseRoles(settings.role);
    shardMetrics(options.metrics, this.#shards);
    const routed = config.jobsUrl !== undefined;
    this.placement = {
      choose: (name) => this.#shards.choose(name),
      routed: routed ? { localShard: settings.shardId, live: () => this.#shards.live() } : undefined,
    };
    this.shardReads = routed
      ? new ShardReads({
          shards: this.#shards,
          // Only a worker has a shard's files.
          localShard: this.#roles.worker ? settings.shardId : null,
          clusterToken: settings.clusterToken,
          shardOf: async (name) => (await options.replication().getSource(name)).shard,
        })
      : undefined;
  }

  /** The storage shards: state, sources placed, bytes, the worker serving each, when it was last seen. */
  listShards(): Promise<ShardInfo[]> {
    return this.#shards.list();
  }

  /**
   * Moves source `name` to shard `shard`: a worker of that shard syncs it
   * (from upstream, under the source's lease), then places it there under a
   * new epoch in the same write; the old shard's writes are refused from then
   * on. Resolves once the move is requested; false when it is there already.
   * @throws SourceNotFoundError, ShardNotFoundError, ShardUnavailableError, MovesNeedRoutedJobsError
   */
  async reassignSource(name: string, shard: string): Promise<boolean> {
    this.#requireRoutedJobs();
    const replication = this.options.replication();
    const source = await replication.getSource(name);
    const moving = await this.#shards.requestMove(source.id, shard);
    if (moving) await replication.requestSyncByIds([source.id], { trigger: 'manual' });
    return moving;
  }

  /**
   * Moves every source off shard `id` (marked draining: it takes no new
   * ones); with `wait`, resolves when none is left on it (or rejects after
   * `timeoutMs`). Returns how many were asked to move.
   * @throws ShardNotFoundError, NoOtherShardError, MovesNeedRoutedJobsError, DrainTimeoutError
   */
  async drainShard(id: string, options: { wait?: boolean; timeoutMs?: number; pollMs?: number } = {}): Promise<number> {
    this.#requireRoutedJobs();
    const moving = await this.#shards.drain(id);
    await this.options.replication().requestSyncByIds(moving, { trigger: 'manual' });
    const timeoutMs = options.timeoutMs ?? 30 * 60_000;
    const deadline = Date.now() + timeoutMs;
    for (let left = options.wait ? await this.#shards.sourcesOn(id) : 0; left > 0; left = await this.#shards.sourcesOn(id)) {
      if (Date.now() > deadline) throw new DrainTimeoutError(id, left, timeoutMs);
      await new Promise((resolve) => setTimeout(resolve, options.pollMs ?? 500));
    }
    return moving.length;
  }

  /**
   * A worker joins its shard: registers it (placing the sources added while
   * none was active, whose requests are then nudged) and heartbeats it; in
   * distributed mode it also serves `shardRoutes` to api processes on its
   * internal endpoint. Once per process; a process without the worker role
   * does nothing.
   */
  async join(options: JoinOptions): Promise<void> {
    if (!this.#roles.worker || this.#membership) return;
    const { config, settings, logger } = this.options;
    if (config.jobsUrl !== undefined && settings.clusterToken !== undefined) {
      const { startInternalServer } = await import('./internal-server.js');
      this.#internalServer = await startInternalServer({
        token: settings.clusterToken,
        listen: settings.internalListen,
        ...(settings.internalUrl !== undefined ? { advertisedUrl: settings.internalUrl } : {}),
        logger,
        serverPaths: options.serverPaths,
        metrics: this.options.metrics,
        routes: async (server, context) => {
          for (const routes of options.shardRoutes) await routes(server, context);
        },
      });
    }
    const replication = this.options.replication();
    this.#membership = new ShardMembership({
      shards: this.#shards,
      shardId: settings.shardId,
      dataDir: config.dataDir,
      mirrorsDir: config.mirrorsDir,
      heartbeatMs: Math.max(1000, config.leaseTtlMs / 3),
      logger,
      ...(this.#internalServer ? { endpoint: this.#internalServer.url } : {}),
      // Sources move only where jobs are routed by shard (see reassignSource).
      ...(config.jobsUrl !== undefined ? { sweep: () => replication.removeMovedCopies(settings.shardId, settings.movedCopyGraceMs) } : {}),
    });
    // Sources placed now had no shard, so no job: their requests are nudged now.
    await replication.nudge(await this.#membership.start());
  }

  /** Stops the heartbeat and the internal endpoint. */
  async stop(): Promise<void> {
    await this.#membership?.stop();
    await this.#internalServer?.close();
  }

  /** Moves are carried out by the target shard's workers: only jobs routed by shard reach them. */
  #requireRoutedJobs(): void {
    if (this.options.config.jobsUrl === undefined) throw new MovesNeedRoutedJobsError();
  }
}
