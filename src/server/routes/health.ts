import type { FastifyPluginAsync } from 'fastify';
import type { Kernel } from '../../kernel/kernel.js';

/** `/livez` (the process answers), `/readyz` (database and lease backend reachable), `/metrics`. */
export function healthRoutes(kernel: Kernel): FastifyPluginAsync {
  return async (server) => {
    const metrics = kernel.metrics;
    server.get('/livez', { schema: { hide: true } }, async () => ({ status: 'ok' }));

    server.get('/readyz', { schema: { hide: true } }, async (_request, reply) => {
      const { database, leases } = await kernel.readiness();
      const ready = database === 'ok' && leases === 'ok';
      return reply.code(ready ? 200 : 503).send({ status: ready ? 'ok' : 'unavailable', database, leases });
    });

    server.get('/metrics', { schema: { hide: true } }, async (_request, reply) => {
      const body = await metrics.metrics();
      return reply.type(metrics.contentType).send(body);
    });
  };
}
