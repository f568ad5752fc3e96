import type { FastifyRequest } from 'fastify';
import type { ShardReads } from '../cluster/forward.js';
import type { ServerPaths } from '../util/server-paths.js';
import type { ForgesyncServer } from './app.js';
import type { AuthTokens } from './auth.js';

/*
 * What the HTTP server asks of a module that serves routes. The kernel runs
 * modules (their jobs and background work) without knowing HTTP; the server
 * registers the routes of every module that has them.
 */

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

/** A module with HTTP routes. */
export interface ServesRoutes {
  /** Registers the module's HTTP routes on `server` (prefixes are the module's own: `/api/…`, `/hooks/…`). */
  routes(server: ForgesyncServer, context: RouteContext): Promise<void>;
}

/** Whether `module` serves routes. */
export function servesRoutes(module: object): module is ServesRoutes {
  return typeof (module as Partial<ServesRoutes>).routes === 'function';
}
