import { z } from 'zod';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { leaseHolderJson } from '../../leases/json.js';
import type { RouteContext } from '../../server/module-routes.js';
import { access, BEARER, errorResponses } from '../../server/routes/common.js';
import { inScope } from '../../server/auth.js';
import { SourceNotFoundError } from '../../store/errors.js';
import type { SourceWithRegistry } from '../../store/types.js';
import type { Replication } from '../module.js';
import { syncLeaseKey } from '../sync.js';
import {
  CreateSourceBodySchema,
  SourceDetailQuerySchema,
  SourceDetailSchema,
  SourceListQuerySchema,
  SourceListSchema,
  SourceParamsSchema,
  SourceSchema,
  UpdateSourceBodySchema,
} from './schemas.js';
import { attemptJson, sourceJson } from './serialize.js';
import { sourceActionRoutes } from './source-actions.js';

/** How long DELETE waits for a running sync to let go of the source's lease before answering 409. */
const REMOVE_WAIT_MS = 10_000;

const tags = ['sources'];

/**
 * `/api/sources` CRUD: list (state filter, search, pagination), create,
 * detail (registry row, lease holder, last attempts), update, delete; plus
 * the sync/resync actions and the overview (see source-actions.ts).
 * Reads need the read token, changes the admin token.
 */
export function sourceRoutes(replication: Replication, { tokens, serverPaths }: Pick<RouteContext, 'tokens' | 'serverPaths'>): FastifyPluginAsyncZod {
  const json = (source: SourceWithRegistry) => sourceJson(source, serverPaths);
  return async (server) => {
    const deps: SourceRouteDeps = { replication, serverPaths, json, read: access('scoped-read', tokens), admin: access('admin', tokens) };
    sourceListRoutes(server, deps);
    oneSourceRoutes(server, deps);
    await server.register(sourceActionRoutes(replication, tokens));
  };
}

type SourcesServer = Parameters<FastifyPluginAsyncZod>[0];

/** What the source routes share: the module, how a source is shown, and the read and admin guards. */
interface SourceRouteDeps {
  replication: Replication;
  serverPaths: RouteContext['serverPaths'];
  json: (source: SourceWithRegistry) => ReturnType<typeof sourceJson>;
  read: ReturnType<typeof access>;
  admin: ReturnType<typeof access>;
}

/** `/sources`: list and create. */
function sourceListRoutes(server: SourcesServer, { replication, json, read, admin }: SourceRouteDeps): void {
  server.get(
    '/sources',
    {
      ...read,
      schema: {
        tags,
        summary: 'List sources',
        description: 'Sources sorted by name, optionally filtered by registry state and a search string, one page at a time.',
        security: BEARER,
        querystring: SourceListQuerySchema,
        response: { 200: SourceListSchema, ...errorResponses(400) },
      },
    },
    async (request) => {
      const { state, search, limit, offset } = request.query;
      const filter = { ...(state ? { state } : {}), ...(search ? { search } : {}) };
      const sees = request.access?.sees;
      if (sees) {
        // A scoped reader's page is cut from the sources it sees: globs are matched here, not in SQL (whose case rules differ per database).
        const visible = (await replication.sources.list(filter)).filter((source) => sees(source.name));
        return { items: visible.slice(offset, offset + limit).map(json), total: visible.length, limit, offset };
      }
      const [items, total] = await Promise.all([replication.sources.list({ ...filter, limit, offset }), replication.sources.count(filter)]);
      return { items: items.map(json), total, limit, offset };
    },
  );

  server.post(
    '/sources',
    {
      ...admin,
      schema: {
        tags,
        summary: 'Add a source',
        description: 'Registers an upstream repository; its first sync is requested at once.',
        security: BEARER,
        body: CreateSourceBodySchema,
        response: { 201: SourceSchema, ...errorResponses(400, 403, 409) },
      },
    },
    async (request, reply) => {
      const source = await replication.addSource(request.body);
      return reply.code(201).send(json(source));
    },
  );
}

/** `/sources/:name`: detail, update, delete. */
function oneSourceRoutes(server: SourcesServer, { replication, serverPaths, json, read, admin }: SourceRouteDeps): void {

  server.get(
    '/sources/:name',
    {
      ...read,
      schema: {
        tags,
        summary: 'Show a source',
        description: 'The source and its registry row, the current holder of its sync lease, and its last attempts (newest first).',
        security: BEARER,
        params: SourceParamsSchema,
        querystring: SourceDetailQuerySchema,
        response: { 200: SourceDetailSchema, ...errorResponses(400, 404) },
      },
    },
    async (request) => {
      if (!inScope(request, request.params.name)) throw new SourceNotFoundError(request.params.name);
      const source = await replication.getSource(request.params.name);
      const leaseKey = syncLeaseKey(source.id);
      const [holder, attempts, housekeeping] = await Promise.all([
        replication.leaseHolder(source),
        request.query.attempts > 0 ? replication.registry.attempts(source.id, request.query.attempts) : [],
        replication.housekeeping.describe([source]),
      ]);
      return {
        ...json(source),
        leaseKey,
        lease: holder ? leaseHolderJson(holder) : null,
        attempts: attempts.map((attempt) => attemptJson(attempt, serverPaths)),
        housekeeping: housekeeping.get(source.id)!,
      };
    },
  );

  server.patch(
    '/sources/:name',
    {
      ...admin,
      schema: {
        tags,
        summary: 'Change a source',
        description: 'Changes the URL (the mirror is re-cloned on the next sync), schedule, credential reference or enabled flag.',
        security: BEARER,
        params: SourceParamsSchema,
        body: UpdateSourceBodySchema,
        response: { 200: SourceSchema, ...errorResponses(400, 403, 404) },
      },
    },
    async (request) => {
      const { credentialRef, ...rest } = request.body;
      const patch = { ...rest, ...(credentialRef !== undefined ? { credentialRef: credentialRef ?? '' } : {}) };
      return json(await replication.updateSource(request.params.name, patch));
    },
  );

  server.delete(
    '/sources/:name',
    {
      ...admin,
      schema: {
        tags,
        summary: 'Remove a source',
        description: 'Deletes the source, its registry row and its mirror, under the source\'s lease (409 if a sync keeps it busy).',
        security: BEARER,
        params: SourceParamsSchema,
        response: { 204: z.null().describe('removed'), ...errorResponses(400, 403, 404, 409) },
      },
    },
    async (request, reply) => {
      await replication.removeSource(request.params.name, { waitMs: REMOVE_WAIT_MS });
      return reply.code(204).send(null);
    },
  );
}
