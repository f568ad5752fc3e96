import type { FastifyPluginAsync } from 'fastify';
import type { Forgesync } from '../../app/forgesync.js';

/** `/livez` (the process answers), `/readyz` (database and lease backend reachable), `/metrics`. */
export function healthRoutes(app: Forgesync): FastifyPluginAsync {
  return async (server) => {
    // Created now, so a serving process counts from its first sync on.
    const metrics = app.metrics;
    server.get('/livez', { schema: { hide: true } }, async () => ({ status: 'ok' }));

    server.get('/readyz', { schema: { hide: true } }, async (_request, reply) => {
      const checks = await Promise.allSettled([app.ping(), app.leases.ping()]);
      const [database, leases] = checks.map((check) => (check.status === 'fulfilled' ? 'ok' : String((check.reason as Error)?.message ?? check.reason)));
      const ready = database === 'ok' && leases === 'ok';
      return reply.code(ready ? 200 : 503).send({ status: ready ? 'ok' : 'unavailable', database, leases });
    });

    server.get('/metrics', { schema: { hide: true } }, async (_request, reply) => {
      const body = await metrics.registry.metrics();
      return reply.type(metrics.registry.contentType).send(body);
    });
  };
}
