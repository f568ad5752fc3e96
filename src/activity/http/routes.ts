import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { RouteContext } from '../../server/module-routes.js';
import { access, BEARER, errorResponses } from '../../server/routes/common.js';
import type { Activity } from '../activity.js';

const RangeQuery = z.object({ range: z.enum(['hour', 'day', 'month']).default('hour').describe('hour and day: per-minute buckets; month: per-hour buckets') });

const ChartSchema = z.object({
  id: z.string(),
  title: z.string(),
  unit: z.string(),
  series: z.array(z.object({ label: z.string(), values: z.array(z.number().nullable()), total: z.number().nullable() })),
});

const SeriesSchema = z.object({
  range: z.enum(['hour', 'day', 'month']),
  resolution: z.enum(['minute', 'hour']),
  stepMs: z.number(),
  times: z.array(z.number()).describe('bucket starts, epoch ms, oldest first; each series has one value per bucket'),
  charts: z.array(ChartSchema),
});

const GroupSchema = z.object({
  id: z.string(),
  message: z.string().describe('the error with numbers, hashes, ids, temp paths and URL credentials replaced by placeholders'),
  example: z.string().describe('the newest message of the group as it was (server directories shown as placeholders)'),
  count: z.number(),
  firstSeenAt: z.string(),
  lastSeenAt: z.string(),
  sources: z.array(z.string()),
});

const GroupParams = z.object({ group: z.string().regex(/^[0-9a-f]{16}$/) });

/** `/api/activity/…`: the charts' series and the failure groups (read token), and a group's resync (admin token). */
export function activityRoutes(activity: Activity, { tokens, serverPaths }: Pick<RouteContext, 'tokens' | 'serverPaths'>): FastifyPluginAsyncZod {
  return async (server) => {
    const admin = access('admin', tokens);
    const read = access('read', tokens);
    const tags = ['activity'];

    server.get(
      '/api/activity/series',
      { ...read, schema: { tags, summary: 'Activity over time: the dashboard charts\' series', security: BEARER, querystring: RangeQuery, response: { 200: SeriesSchema, ...errorResponses(400) } } },
      async (request) => activity.series(request.query.range),
    );

    server.get(
      '/api/activity/failures',
      { ...read, schema: { tags, summary: 'Failing sources grouped by normalised error', security: BEARER, response: { 200: z.array(GroupSchema), ...errorResponses() } } },
      async () =>
        (await activity.failures()).map(({ sourceIds: _ids, firstSeenAt, lastSeenAt, example, ...group }) => ({
          ...group,
          example: serverPaths.hide(example),
          firstSeenAt: new Date(firstSeenAt).toISOString(),
          lastSeenAt: new Date(lastSeenAt).toISOString(),
        })),
    );

    server.post(
      '/api/activity/failures/:group/resync',
      {
        ...admin,
        schema: {
          tags,
          summary: 'Request a sync of every source of a failure group',
          security: BEARER,
          params: GroupParams,
          response: { 202: z.object({ group: z.string(), requested: z.number(), sources: z.array(z.string()) }), ...errorResponses(400, 403, 404) },
        },
      },
      async (request, reply) => reply.code(202).send(await activity.resyncGroup(request.params.group)),
    );
  };
}
