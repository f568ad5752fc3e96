import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { leaseHolderJson } from '../../leases/json.js';
import type { LeaseManager } from '../../leases/manager.js';
import type { AuthTokens } from '../auth.js';
import {
  LeaseHolderSchema,
  LeaseListQuerySchema,
  LeaseListSchema,
  LeaseParamsSchema,
  ReleaseBodySchema,
  ReleaseResultSchema,
} from '../schemas.js';
import { access, BEARER, errorResponses, notFound } from './common.js';

const tags = ['leases'];

/**
 * `/api/leases`: list live holders (by key prefix), inspect one key, and
 * force-release an orphaned lease, optionally only if its holder has a
 * given fence. Keys go in the path URL-encoded (`sync%3Arepository%3A1`).
 */
export function leaseRoutes(leases: LeaseManager, tokens: AuthTokens): FastifyPluginAsyncZod {
  return async (server) => {
    server.get(
      '/leases',
      {
        ...access('read', tokens),
        schema: {
          tags,
          summary: 'List lease holders',
          description: 'Every live holder whose key starts with `prefix`, sorted by key.',
          security: BEARER,
          querystring: LeaseListQuerySchema,
          response: { 200: LeaseListSchema, ...errorResponses(400) },
        },
      },
      async (request) => {
        const now = Date.now();
        const holders = await leases.list(request.query.prefix);
        return { items: holders.map((holder) => leaseHolderJson(holder, now)) };
      },
    );

    server.get(
      '/leases/:key',
      {
        ...access('read', tokens),
        schema: {
          tags,
          summary: 'Show the holder of one lease',
          description: '404 when the lease is free.',
          security: BEARER,
          params: LeaseParamsSchema,
          response: { 200: LeaseHolderSchema, ...errorResponses(400, 404) },
        },
      },
      async (request, reply) => {
        const holder = await leases.inspect(request.params.key);
        if (!holder) return reply.code(404).send(notFound(`lease "${request.params.key}" is free`));
        return leaseHolderJson(holder);
      },
    );

    server.post(
      '/leases/:key/release',
      {
        ...access('admin', tokens),
        schema: {
          tags,
          summary: 'Force-release a lease',
          description:
            'Administrative release of an orphaned lease, whoever holds it. With `fence`, only the holder with exactly that ' +
            'fence is released (a newer holder is left alone). The holder\'s next heartbeat finds the lease gone and stops its work.',
          security: BEARER,
          params: LeaseParamsSchema,
          body: ReleaseBodySchema,
          response: { 200: ReleaseResultSchema, ...errorResponses(400, 403) },
        },
      },
      async (request) => {
        const { key } = request.params;
        const fence = request.body?.fence;
        const released = await leases.forceRelease(key, fence === undefined ? {} : { fence: BigInt(fence) });
        request.log.warn(
          { event: 'lease_force_release', lease_key: key, fence: fence === undefined ? null : String(fence), released },
          released ? `lease "${key}" force-released` : `lease "${key}" not released`,
        );
        return { released };
      },
    );
  };
}
