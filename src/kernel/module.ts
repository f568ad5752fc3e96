import type { Command } from 'commander';
import type { FastifyRequest } from 'fastify';
import type { ShardReads } from '../cluster/forward.js';
import type { SettingGroup } from '../config/setting.js';
import type { JobKind } from '../jobs/types.js';
import type { AuthTokens } from '../server/auth.js';
import type { ForgesyncServer } from '../server/app.js';
import type { ServerPaths } from '../util/server-paths.js';

/** What a module's routes get besides the server: the tokens their access checks use, and in distributed mode where files are. */
export interface RouteContext {
  tokens: AuthTokens;
  /** Who makes a request, to tell one caller's holds from another's (default: its token's id, see server/auth.ts callerOf). */
  caller?: (request: FastifyRequest) => string | null;
  /** Distributed mode: reads that need a source's files are answered by its shard's worker. */
  shardReads?: ShardReads;
  /** The server's directories, hidden in texts the routes answer (stored error messages; see util/server-paths.ts). */
  serverPaths: ServerPaths;
}

/**
 * A capability of forgesync (replication, snapshots, …) as the kernel, the
 * server and the CLI see it. A module is created by its own factory from the
 * few things it needs (see each module's `*Options`) and declares here what
 * it brings: job handlers, HTTP routes and background work. Its settings and
 * CLI commands are declared statically beside it (settings.ts, commands.ts),
 * since they are needed before anything is opened.
 */
export interface ForgesyncModule {
  /** Short name for logs, e.g. `replication`. */
  readonly name: string;
  /** The job kinds this module runs, by kind. */
  readonly jobs?: Readonly<Record<string, JobKind>>;
  /** Registers the module's HTTP routes on `server` (prefixes are the module's own: `/api/…`, `/hooks/…`). */
  routes?(server: ForgesyncServer, context: RouteContext): Promise<void>;
  /** Starts background work (schedulers) in a serving process, after the job transport started. */
  start?(): void;
  /** Stops background work and lets go of what the module holds; called before the kernel closes. */
  stop?(): Promise<void>;
}

/**
 * What a module declares before anything is opened: its settings (read by
 * the configuration loader, listed in the README) and its CLI commands
 * (which open forgesync when they run, see cli/app-context.ts).
 */
export interface ModuleDefinition {
  readonly name: string;
  readonly settings: SettingGroup;
  commands(): Command[];
}
