import type { Command } from 'commander';
import type { Registry } from 'prom-client';
import type { SettingGroup, SettingValues } from '../config/setting.js';
import type { CredentialStore } from '../credentials/store.js';
import type { EgressPolicy } from '../egress/policy.js';
import type { GitRunner } from '../git/runner.js';
import type { JobKind, JobTransport } from '../jobs/types.js';
import type { kernelSettings } from '../kernel/settings.js';
import type { LeaseManager } from '../leases/manager.js';
import type { Logger } from '../logging/logger.js';
import type { ForgesyncServer } from '../server/app.js';
import type { RouteContext } from '../server/module-routes.js';
import type { Database } from '../store/database.js';
import type { Source } from '../store/types.js';
import type { Signal } from '../util/signal.js';

/*
 * What a capability module is (replication, snapshots, the importer, the
 * feeds, the cluster): a folder that owns its settings, its SQL, its jobs,
 * its HTTP routes, its CLI commands and its dashboard page, and offers the
 * rest of forgesync one interface, its API (`<module>/api.ts`). Its
 * definition (`<module>/definition.ts`) is all the application knows of it:
 * app/compose.ts opens each definition with the kernel's services, the
 * module's own settings and the other modules' APIs it declared it needs,
 * and the CLI lists its commands.
 */

/** The settings every module may read besides its own: the kernel's, and the directories derived from them. */
export type KernelConfig = SettingValues<typeof kernelSettings> & {
  /** Directory of the bare mirrors: `<dataDir>/mirrors`. */
  mirrorsDir: string;
  /** Directory of the snapshots: `<dataDir>/snapshots`. */
  snapshotsDir: string;
};

/** What the kernel gives every module it opens. */
export interface ModuleServices {
  readonly config: KernelConfig;
  readonly database: Database;
  readonly leases: LeaseManager;
  readonly jobs: JobTransport;
  readonly logger: Logger;
  /** This instance's Prometheus registry. */
  readonly metrics: Registry;
  /** The one hardened git runner; every outbound connection passes `egress`. */
  readonly runner: GitRunner;
  readonly egress: EgressPolicy;
  /** Git transports allowed (FORGESYNC_GIT_PROTOCOLS). */
  readonly protocols: ReadonlySet<string>;
  /** The operator's credentials, each bound to the hosts it may be sent to. */
  readonly credentials: CredentialStore;
  /** Notified after a write that appended to the change log committed (the feeds then deliver it). */
  readonly changes: Signal;
  /** Whether this process runs jobs (started as a worker); a process that does not only records requests. */
  runsJobs(): boolean;
  /** Receives git's progress lines (clone/fetch), e.g. to draw them on a terminal. */
  readonly onGitProgress?: (source: Source, line: string) => void;
}

/** What opening a module gives the kernel and the application. */
export interface OpenedModule<Api> {
  /** What other modules, the CLI, the server and library users call. */
  readonly api: Api;
  /** The job kinds this module runs (registered on the job transport), by kind. */
  readonly jobs?: Readonly<Record<string, JobKind>>;
  /** Registers the module's HTTP routes (prefixes are its own: `/api/…`, `/hooks/…`). */
  routes?(server: ForgesyncServer, context: RouteContext): Promise<void>;
  /**
   * Routes a worker serves to api processes over the cluster's internal
   * server (distributed mode): reads of the files on its shard, answered
   * from here and never forwarded further.
   */
  shardRoutes?(server: ForgesyncServer, context: RouteContext): Promise<void>;
  /** Starts background work (schedulers) in a process with the scheduler role, once the job transport started. */
  start?(): void;
  /** Stops background work and lets go of what the module holds; called before the kernel closes. */
  stop?(): Promise<void>;
}

/**
 * Runs a CLI command's work with the module's API, opening forgesync for
 * the command and closing it afterwards (see app/cli.ts). `logLevel` is the
 * level the command logs at unless FORGESYNC_LOG_LEVEL says otherwise.
 */
export type WithApi<Api> = <T>(command: Command, run: (api: Api) => Promise<T>, options?: { logLevel?: string }) => Promise<T>;

/** A module as the application composes it. */
export interface ModuleDefinition<Name extends string, Settings extends SettingGroup, Needs, Api> {
  readonly name: Name;
  /** Read by the configuration loader, listed in the README's settings table. */
  readonly settings: Settings;
  /** Its dashboard pages, in the order of the navigation: ES modules in its `dashboard/` folder (see server/dashboard/app.js for their shape). */
  readonly dashboardPages?: readonly string[];
  /** Creates the module; `needs` are the other modules' APIs it declared (its `Needs` type), wired in app/compose.ts. */
  open(services: ModuleServices, settings: SettingValues<Settings>, needs: Needs): OpenedModule<Api> | Promise<OpenedModule<Api>>;
  /** Its CLI commands, which reach forgesync only through `withApi`. */
  commands(withApi: WithApi<Api>): Command[];
}

/** Any module's definition (the composition's list). */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type AnyModuleDefinition = ModuleDefinition<string, SettingGroup, any, any>;

/**
 * A need on a module opened later (it would otherwise make a cycle): called
 * when it is used, never while the module that declared it is opening.
 */
export type Later<Api> = () => Api;
