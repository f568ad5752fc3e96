import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { Forgesync } from '../../app/forgesync.js';
import type { AuthTokens } from '../auth.js';

/** TODO(issue 4): dashboard routes. */
export function dashboardRoutes(_app: Forgesync, _tokens: AuthTokens): FastifyPluginAsyncZod {
  return async () => {};
}
