import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { access, BEARER, errorResponses } from '../../server/routes/common.js';
import type { AuthTokens } from '../../server/auth.js';
import type { RegistryCounts } from '../store/registry.js';
import type { Replication, ResyncTarget } from '../module.js';
import { BulkResyncBodySchema, BulkResyncResultSchema, OverviewSchema, SourceParamsSchema, SyncRequestedSchema } from './schemas.js';

/** How many registry rows a bulk resync target selects, from one counts() snapshot. */
export function countTarget(counts: RegistryCounts, target: Exclude<ResyncTarget, { name: string }>): number {
  if (target === 'all') return counts.pending + counts.started + counts.synced + counts.failed;
  if (target === 'failed') return counts.failed;
  return counts[target.state];
}

/**
 * Actions on sources: sync or resync one (records a request and nudges a
 * worker, 202), bulk resync by filter (with a dry run that only counts),
 * and the overview the dashboard's front page shows.
 */
export function sourceActionRoutes(replication: Replication, tokens: AuthTokens): FastifyPluginAsyncZod {
  return async (server) => {
    const admin = access('admin', tokens);

    for (const action of ['sync', 'resync'] as const) {
      server.post(
        `/sources/:name/${action}`,
        {
          ...admin,
          schema: {
            tags: ['sources'],
            summary: action === 'sync' ? 'Request a sync of one source' : 'Request a resync of one source',
            description:
              'Records a request (the request counter goes up; a synced or failed row becomes pending, backoff cleared) ' +
              'and nudges a worker. Answers 202 once the request is durably recorded.',
            security: BEARER,
            params: SourceParamsSchema,
            response: { 202: SyncRequestedSchema, ...errorResponses(400, 403, 404) },
          },
        },
        async (request, reply) => {
          const requested = await replication.requestSync(request.params.name, { trigger: 'manual' });
          return reply.code(202).send({ name: request.params.name, requested });
        },
      );
    }

    server.post(
      '/resync',
      {
        ...admin,
        schema: {
          tags: ['sources'],
          summary: 'Request a resync of many sources',
          description:
            'Records a request on every registry row the filter selects (`failed`, `all`, or `{ "state": … }`) and returns how many ' +
            'rows that was. With `dryRun`, only counts them (for a confirmation) and records nothing.',
          security: BEARER,
          body: BulkResyncBodySchema,
          response: { 200: BulkResyncResultSchema, ...errorResponses(400, 403) },
        },
      },
      async (request) => {
        const { filter, dryRun } = request.body;
        const affected = dryRun ? countTarget(await replication.registry.counts(), filter) : await replication.requestSyncMany(filter, { trigger: 'manual' });
        if (!dryRun) request.log.info({ event: 'bulk_resync', filter, affected }, `resync requested for ${affected} sources`);
        return { affected, dryRun };
      },
    );

    server.get(
      '/overview',
      {
        ...access('scoped-read', tokens),
        schema: {
          tags: ['overview'],
          summary: 'Registry counts, scheduler state and capacity',
          security: BEARER,
          response: { 200: OverviewSchema, ...errorResponses() },
        },
      },
      async (request) => {
        const counts = await countsSeenBy(replication, request.access?.sees);
        return {
          counts: { ...counts, total: counts.pending + counts.started + counts.synced + counts.failed },
          scheduler: { state: replication.scheduler.state },
          capacity: await replication.syncLoad(),
        };
      },
    );
  };
}

/** The registry's counts by state, of the sources a scoped reader sees (`sees`), or of all. */
async function countsSeenBy(replication: Replication, sees: ((name: string) => boolean) | undefined): Promise<RegistryCounts> {
  if (!sees) return replication.registry.counts();
  const counts: RegistryCounts = { pending: 0, started: 0, synced: 0, failed: 0, verified: 0, mismatch: 0, missing: 0 };
  for (const { name, registry } of await replication.sources.list()) {
    if (!sees(name)) continue;
    counts[registry.state]++;
    if (registry.verificationState === 'verified' || registry.verificationState === 'mismatch') counts[registry.verificationState]++;
    if (registry.missingOnPrimary) counts.missing++;
  }
  return counts;
}
