import fastifySwagger from '@fastify/swagger';
import Fastify from 'fastify';
import { jsonSchemaTransform, serializerCompiler, validatorCompiler, type ZodTypeProvider } from 'fastify-type-provider-zod';
import type { Forgesync } from '../app/forgesync.js';
import type { AuthTokens } from './auth.js';
import { errorHandler } from './errors.js';
import { dashboardRoutes } from './routes/dashboard.js';
import { healthRoutes } from './routes/health.js';
import { leaseRoutes } from './routes/leases.js';
import { snapshotRoutes } from './routes/snapshots.js';
import { sourceRoutes } from './routes/sources.js';
import { webhookRoutes } from './webhooks/index.js';

/** Webhook bodies above this are refused with 413. */
export const DEFAULT_BODY_LIMIT = 1024 * 1024;

export interface ServerOptions {
  tokens: AuthTokens;
  bodyLimit?: number;
}

/**
 * Builds the HTTP server of `forgesync serve`: API, webhooks, dashboard,
 * metrics and health checks over one Forgesync instance. Routes declare zod
 * schemas, which validate requests and produce the OpenAPI document.
 */
export async function buildServer(app: Forgesync, options: ServerOptions) {
  const server = Fastify({
    // Per-request access lines (info) would drown the log in a webhook storm;
    // forgesync logs one line per delivery and per sync itself.
    loggerInstance: app.logger.child({ component: 'http' }, { level: 'warn' }),
    bodyLimit: options.bodyLimit ?? DEFAULT_BODY_LIMIT,
  }).withTypeProvider<ZodTypeProvider>();
  server.setValidatorCompiler(validatorCompiler);
  server.setSerializerCompiler(serializerCompiler);
  server.setErrorHandler(errorHandler);
  await server.register(fastifySwagger, {
    openapi: {
      info: { title: 'forgesync', version: '1', description: 'Repository replication under exclusive, fenced leases.' },
      components: { securitySchemes: { bearer: { type: 'http', scheme: 'bearer' } } },
    },
    transform: jsonSchemaTransform,
  });
  server.get('/openapi.json', { schema: { hide: true } }, async () => server.swagger());
  await server.register(healthRoutes(app));
  await server.register(sourceRoutes(app, options.tokens), { prefix: '/api' });
  await server.register(leaseRoutes(app, options.tokens), { prefix: '/api' });
  await server.register(snapshotRoutes(app, options.tokens), { prefix: '/api' });
  await server.register(webhookRoutes(app), { prefix: '/hooks' });
  await server.register(dashboardRoutes(app, options.tokens));
  return server;
}

/** The server type route modules receive. */
export type ForgesyncServer = Awaited<ReturnType<typeof buildServer>>;
