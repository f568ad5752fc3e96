import { EgressPolicy } from '../egress/policy.js';
import { GitRunner } from '../git/runner.js';
import { parseProtocols } from '../git/url.js';
import { Kernel } from '../kernel/kernel.js';
import { createLogger, type Logger } from '../logging/logger.js';
import { CredentialStore } from '../credentials/store.js';
import type { ModuleServices } from '../module/definition.js';
import type { Source } from '../store/types.js';
import { requireSharedBackends } from '../cluster/preflight.js';
import { parseRoles, type Roles } from '../cluster/roles.js';
import type { RegisterRoutes } from '../server/module-routes.js';
import { Signal } from '../util/signal.js';
import type { ServerPaths } from '../util/server-paths.js';
import { serverPathsOf, type ForgesyncConfig } from './config.js';
import { composeModules, type ModuleApis, type NamedModule } from './compose.js';

export type { AddSourceInput, ResyncTarget, SyncWaitResult } from '../replication/options.js';

export interface OpenOptions {
  logger?: Logger;
  /** Receives git's progress lines (clone/fetch), e.g. to draw them on a terminal. */
  onProgress?: (source: Source, line: string) => void;
}

/**
 * One forgesync instance: the kernel (database, leases, job transport,
 * logger, metrics) and every capability module on it, each reached through
 * its API (`app.replication.addSource(…)`, `app.snapshots.open(…)`). The
 * CLI, the server, library users and tests all open one.
 */
export class Forgesync implements ModuleApis {
  readonly cluster: ModuleApis['cluster'];
  readonly replication: ModuleApis['replication'];
  readonly snapshots: ModuleApis['snapshots'];
  readonly importer: ModuleApis['importer'];
  readonly feeds: ModuleApis['feeds'];
  readonly lfs: ModuleApis['lfs'];
  readonly cloning: ModuleApis['cloning'];
  readonly activity: ModuleApis['activity'];
  #serverPaths: ServerPaths | undefined;

  private constructor(
    readonly config: ForgesyncConfig,
    readonly kernel: Kernel,
    /** The one hardened git runner every module runs git through. */
    readonly runner: GitRunner,
    /** The operator's credentials, feed secrets and scoped readers (the secrets file and the environment). */
    readonly credentials: CredentialStore,
    apis: ModuleApis,
    readonly modules: readonly NamedModule[],
  ) {
    ({ cluster: this.cluster, replication: this.replication, snapshots: this.snapshots, importer: this.importer, feeds: this.feeds, lfs: this.lfs, cloning: this.cloning, activity: this.activity } = apis);
  }

  /** Opens the registry database (running migrations), the lease backend, the job transport and every module. */
  static async open(config: ForgesyncConfig, options: OpenOptions = {}): Promise<Forgesync> {
    const logger = options.logger ?? createLogger(config.logLevel ? { level: config.logLevel } : {});
    const kernel = await Kernel.open({ ...config, logger });
    try {
      const services = servicesOf(kernel, config, options);
      const { apis, opened } = await composeModules(kernel, services, config);
      return new Forgesync(config, kernel, services.runner, services.credentials, apis, opened);
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

  /** Every module's HTTP routes, for the server. */
  get routes(): RegisterRoutes[] {
    return this.modules.flatMap((module) => (module.routes ? [module.routes.bind(module)] : []));
  }

  /** Every module's dashboard pages, in the order of the navigation (served from `src/<module>/dashboard/`). */
  get dashboardPages(): string[] {
    return this.modules.flatMap((module) => module.dashboardPages.map((file) => `/dashboard/${module.name}/${file}`));
  }

  /**
   * Starts what `forgesync serve` runs besides HTTP, for the configured roles
   * (FORGESYNC_ROLE, default all): a worker joins its shard and runs jobs,
   * the scheduler starts the modules' background work. Only some roles need
   * backends the other processes share.
   * @throws SharedBackendsRequiredError
   */
  async startService(): Promise<void> {
    const roles: Roles = parseRoles(this.config.role);
    requireSharedBackends(roles, this.config);
    const shardRoutes = this.modules.flatMap((module) => (module.shardRoutes ? [module.shardRoutes.bind(module)] : []));
    await this.cluster.join({ shardRoutes, serverPaths: this.serverPaths });
    await this.kernel.start(roles);
  }

  /** Stops the modules' background work and the jobs (running git is killed, rows left pending), then disconnects. */
  close(): Promise<void> {
    return this.kernel.close();
  }
}

/** What every module is opened with: the kernel's parts, the git runner, the egress policy and the credentials. */
function servicesOf(kernel: Kernel, config: ForgesyncConfig, options: OpenOptions): ModuleServices {
  const protocols = parseProtocols(config.gitProtocols);
  // Every outbound connection passes this policy: git's through the runner, the API clients' and sinks' directly.
  const egress = new EgressPolicy({ allowNetworks: config.allowNetworks ?? [] });
  const runner = new GitRunner({
    protocols,
    egress,
    dataDir: config.dataDir,
    ...(config.sshKeyFile !== undefined ? { sshKeyFile: config.sshKeyFile } : {}),
    sshAgent: config.sshAgent,
  });
  const { database, leases, jobs, metrics, logger } = kernel;
  return {
    config,
    database,
    leases,
    jobs,
    logger,
    metrics,
    runner,
    egress,
    protocols,
    credentials: new CredentialStore({ secretsFile: config.secretsFile, logger, protocols, egress }),
    changes: new Signal(),
    runsJobs: () => kernel.started,
    ...(options.onProgress ? { onGitProgress: options.onProgress } : {}),
  };
}
