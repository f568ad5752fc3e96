import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { Forgesync } from '../../app/forgesync.js';

/** TODO(issue 4): webhook receivers. */
export function webhookRoutes(_app: Forgesync): FastifyPluginAsyncZod {
  return async () => {};
}
