import type { FastifyPluginAsync } from 'fastify';
import type { Kernel } from '../../kernel/kernel.js';

/** `/livez` (the process answers), `/readyz` (database and lease backend reachable: ok or failed each), `/metrics` (with `forgesync_ready`, the same checks: see kernel/metrics.ts). */
export function healthRoutes(kernel: Kernel): FastifyPluginAsync {
  return async (server) => {
    const metrics = kernel.metrics;
    server.get('/livez', { schema: { hide: true } }, async () => ({ status: 'ok' }));

    server.get('/readyz', { schema: { hide: true } }, async (request, reply) => {
      // Unauthenticated: only ok or failed per component; what failed goes to the log.
      const checks = await kernel.readiness();
      const failed = Object.entries(checks).filter(([, result]) => result !== 'ok');
      if (failed.length > 0) request.log.warn({ event: 'not_ready', failed: Object.fromEntries(failed) }, 'not ready');
      const state = (result: string) => (result === 'ok' ? 'ok' : 'failed');
      return reply
        .code(failed.length === 0 ? 200 : 503)
        .send({ status: failed.length === 0 ? 'ok' : 'unavailable', database: state(checks.database), leases: state(checks.leases) });
    });

    server.get('/metrics', { schema: { hide: true } }, async (_request, reply) => {
      const body = await metrics.metrics();
      return reply.type(metrics.contentType).send(body);
    });
  };
}
