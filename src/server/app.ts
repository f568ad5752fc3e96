import fastifySwagger from '@fastify/swagger';
import type { IncomingMessage, ServerResponse } from 'node:http';
import Fastify, { type FastifyInstance, type RawServerDefault } from 'fastify';
import { jsonSchemaTransform, serializerCompiler, validatorCompiler, type ZodTypeProvider } from 'fastify-type-provider-zod';
import type { CredentialStore } from '../credentials/store.js';
import type { Kernel } from '../kernel/kernel.js';
import type { Logger } from '../logging/logger.js';
import type { ServerPaths } from '../util/server-paths.js';
import { InvalidInputError } from '../errors.js';
import { AuthFailures, type AuthTokens } from './auth.js';
import { errorHandler } from './errors.js';
import { access } from './routes/common.js';
import { defaultAllowedHosts, guardRequests } from './request-guards.js';
import type { RegisterRoutes } from './module-routes.js';
import { dashboardRoutes } from './routes/dashboard.js';
import { healthRoutes } from './routes/health.js';
import { leaseRoutes } from './routes/leases.js';
import { traceHttpRequests } from '../tracing/http-server.js';

/** Webhook bodies above this are refused with 413. */
export const DEFAULT_BODY_LIMIT = 1024 * 1024;

export interface ServerOptions {
  /** The admin token is required: the API never runs open. */
  tokens: AuthTokens;
  /** Host names accepted in `Host` (default: loopback and this machine's name, see defaultAllowedHosts). */
  allowedHosts?: readonly string[];
  bodyLimit?: number;
  /**
   * Reverse proxies (addresses or CIDRs, FORGESYNC_TRUST_PROXY) whose `X-Forwarded-For`, `-Proto` and `-Host`
   * are believed; from any other peer they are ignored (default: from none).
   */
  trustProxy?: readonly string[];
  /** FORGESYNC_PUBLIC_URL: the base clients reach the server by, for the links answers carry (default: each request's origin). */
  publicUrl?: string | undefined;
}

/** What the server serves of one forgesync instance (see app/forgesync.ts). */
export interface ServedApp {
  kernel: Kernel;
  /** Where the scoped readers are defined (the secrets file). */
  credentials: Pick<CredentialStore, 'readers'>;
  serverPaths: ServerPaths;
  /** Every module's routes. */
  routes: readonly RegisterRoutes[];
  /** Every module's dashboard pages, in the order of the navigation (`/dashboard/<module>/<file>`). */
  dashboardPages: readonly string[];
}

/**
 * Builds the HTTP server of `forgesync serve` over one instance's kernel:
 * health, metrics, leases and the dashboard, then every module's routes
 * (the sources API and webhooks, snapshots, …). Routes declare zod schemas,
 * which validate requests and produce the OpenAPI document.
 */
export async function buildServer(app: ServedApp, options: ServerOptions) {
  const { kernel, serverPaths } = app;
  if (!options.tokens.admin) {
    throw new InvalidInputError('the HTTP API needs an admin token: set FORGESYNC_ADMIN_TOKEN (forgesync serve generates one when it is unset)');
  }
  const tokens: AuthTokens = { readers: () => app.credentials.readers(), ...options.tokens, failures: new AuthFailures() };
  const server = Fastify({
    // Per-request access lines (info) would drown the log in a webhook storm;
    // forgesync logs one line per delivery and per sync itself.
    loggerInstance: kernel.logger.child({ component: 'http' }, { level: 'warn' }),
    // No child logger per request (its reqId binding): the server logs only warnings, and
    // making one costs more than a webhook's own log line.
    childLoggerFactory: (logger) => logger,
    bodyLimit: options.bodyLimit ?? DEFAULT_BODY_LIMIT,
    // request.ip, .protocol and .host then come from X-Forwarded-* only when the direct peer is one of these proxies.
    trustProxy: options.trustProxy?.length ? [...options.trustProxy] : false,
  }).withTypeProvider<ZodTypeProvider>();
  server.setValidatorCompiler(validatorCompiler);
  server.setSerializerCompiler(serializerCompiler);
  server.setErrorHandler(errorHandler(serverPaths));
  guardRequests(server as unknown as FastifyInstance, options.allowedHosts ?? defaultAllowedHosts());
  // A span per request served, when tracing is on (tracing/http-server.ts); nothing otherwise.
  traceHttpRequests(server as unknown as FastifyInstance);
  await server.register(fastifySwagger, {
    openapi: {
      info: { title: 'forgesync', version: '1', description: 'Repository replication under exclusive, fenced leases.' },
      components: { securitySchemes: { bearer: { type: 'http', scheme: 'bearer' } } },
    },
    transform: jsonSchemaTransform,
  });
  // The document maps every route: a read or admin token reads it, like the API it describes.
  server.get('/openapi.json', { ...access('read', tokens), schema: { hide: true } }, async () => server.swagger());
  // A serving process reports its own CPU, memory and event loop too.
  kernel.collectProcessMetrics();
  await server.register(healthRoutes(kernel));
  await server.register(leaseRoutes(kernel.leases, tokens), { prefix: '/api' });
  await server.register(dashboardRoutes(app.dashboardPages));
  const context = { tokens, serverPaths, ...(options.publicUrl ? { publicUrl: options.publicUrl } : {}) };
  for (const routes of app.routes) await routes(server, context);
  return server;
}

/** The server as modules' routes see it: Fastify with zod schemas. */
export type ForgesyncServer = FastifyInstance<RawServerDefault, IncomingMessage, ServerResponse, Logger, ZodTypeProvider>;
