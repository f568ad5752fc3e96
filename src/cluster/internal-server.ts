import Fastify from 'fastify';
import type { Registry } from 'prom-client';
import { serializerCompiler, validatorCompiler, type ZodTypeProvider } from 'fastify-type-provider-zod';
import type { FastifyRequest } from 'fastify';
import type { RouteContext } from '../server/module-routes.js';
import type { Logger } from '../logging/logger.js';
import type { ServerPaths } from '../util/server-paths.js';
import { safeEqual } from '../server/auth.js';
import { errorHandler } from '../server/errors.js';
import type { ForgesyncServer } from '../server/app.js';
import { CALLER_HEADER } from './forward.js';

export interface InternalServerOptions {
  /** FORGESYNC_CLUSTER_TOKEN: the only credential it accepts. */
  token: string;
  /** `host:port` to listen on (FORGESYNC_INTERNAL_LISTEN). */
  listen: string;
  /** The URL others reach it at (FORGESYNC_INTERNAL_URL); default `http://` + the bound address. */
  advertisedUrl?: string;
  logger: Logger;
  /** This worker's directories, hidden in its answers as the api's are in its own. */
  serverPaths: ServerPaths;
  /** Served on `/metrics` (behind the cluster token like everything here): a worker-only process has no other HTTP server. */
  metrics: Registry;
  /** Registers the routes it serves (the snapshots module's, under the same paths as the api's). */
  routes: (server: ForgesyncServer, context: RouteContext) => Promise<void>;
}

export interface InternalServer {
  /** Where api processes reach it. */
  readonly url: string;
  close(): Promise<void>;
}

/** The caller the api authenticated, as it passed it on; the cluster's own reads have none. */
function forwardedCaller(request: FastifyRequest): string | null {
  const value = request.headers[CALLER_HEADER];
  return typeof value === 'string' && /^[\w.-]{1,64}$/.test(value) ? value : null;
}

/**
 * A distributed worker's internal HTTP endpoint: the reads that need its
 * shard's files (snapshots, contents), which api processes forward to it
 * (cluster/forward.ts). Every request must carry the cluster token; the
 * api's caller comes in CALLER_HEADER, so a hold made through it belongs to
 * the caller's token as it would on one process. No dashboard, webhooks or
 * admin routes: nothing here changes the registry. It also serves the
 * process's `/metrics` (the same registry as an api's), for Prometheus to
 * scrape workers run without the api role, with the cluster token.
 */
export async function startInternalServer(options: InternalServerOptions): Promise<InternalServer> {
  const server = Fastify({
    loggerInstance: options.logger.child({ component: 'internal-http' }, { level: 'warn' }),
    bodyLimit: 64 * 1024,
  }).withTypeProvider<ZodTypeProvider>();
  server.setValidatorCompiler(validatorCompiler);
  server.setSerializerCompiler(serializerCompiler);
  server.setErrorHandler(errorHandler(options.serverPaths));
  // The routes check the token too (as admin); refusing here first keeps anything unauthenticated off every path.
  server.addHook('onRequest', async (request, reply) => {
    const given = /^Bearer\s+(\S+)$/i.exec(request.headers.authorization ?? '')?.[1];
    if (!given || !safeEqual(given, options.token)) {
      return reply.code(401).send({ error: 'unauthorized', message: 'the internal endpoint takes the cluster token (FORGESYNC_CLUSTER_TOKEN) only' });
    }
  });
  server.get('/metrics', { schema: { hide: true } }, async (_request, reply) => reply.type(options.metrics.contentType).send(await options.metrics.metrics()));
  await options.routes(server, { tokens: { admin: options.token, read: undefined }, caller: forwardedCaller, serverPaths: options.serverPaths });
  const separator = options.listen.lastIndexOf(':');
  const host = options.listen.slice(0, separator).replace(/^\[(.*)\]$/, '$1');
  const address = await server.listen({ host, port: Number(options.listen.slice(separator + 1)) });
  return { url: options.advertisedUrl ?? address, close: () => server.close() };
}
