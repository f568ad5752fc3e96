import type { FastifyRequest } from 'fastify';
import type { ServerPaths } from '../util/server-paths.js';
import type { ForgesyncServer } from './app.js';
import type { AuthTokens } from './auth.js';

/*
 * What the HTTP server asks of a module that serves routes. The kernel runs
 * modules (their jobs and background work) without knowing HTTP; the server
 * registers the routes of every module that has them (see module/definition.ts).
 */

/** What a module's routes get besides the server: the tokens their access checks use, and in distributed mode where files are. */
export interface RouteContext {
  tokens: AuthTokens;
  /** Who makes a request, to tell one caller's holds from another's (default: its token's id, see server/auth.ts callerOf). */
  caller?: (request: FastifyRequest) => string | null;
  /** The server's directories, hidden in texts the routes answer (stored error messages; see util/server-paths.ts). */
  serverPaths: ServerPaths;
  /** FORGESYNC_PUBLIC_URL: the base clients reach the server by (absent: each request's origin). */
  publicUrl?: string;
}

/** Registers a module's HTTP routes on `server` (prefixes are the module's own: `/api/…`, `/hooks/…`). */
export type RegisterRoutes = (server: ForgesyncServer, context: RouteContext) => Promise<void>;
