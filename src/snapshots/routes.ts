import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { AuthTokens } from '../server/auth.js';
import { access, BEARER, errorResponses } from '../server/routes/common.js';
import { objectAtJson, snapshotEntryJson } from './json.js';
import type { Snapshots } from './service.js';

const SourceParamsSchema = z.object({ name: z.string().min(1).max(100) });

const SnapshotBodySchema = z.strictObject({
  ref: z.string().min(1).max(255).describe('branch, tag or commit sha'),
  sync: z.boolean().default(false).describe('sync the mirror first, under the source lease'),
  waitMs: z.number().int().min(0).max(600_000).default(30_000).describe('how long to wait for that sync before serving the last synced commit marked stale'),
  holdMs: z.number().int().min(1000).max(7 * 24 * 3600_000).optional().describe('protection from eviction (default: FORGESYNC_SNAPSHOT_HOLD)'),
});

const SnapshotSchema = z.object({
  source: z.string(),
  ref: z.string(),
  sha: z.string(),
  path: z.string().describe('read-only directory holding exactly the commit'),
  stale: z.boolean().describe('true when served from the last synced state because no sync could be had within waitMs'),
  handle: z.string().describe('release with DELETE /api/snapshots/<handle>'),
  expiresAt: z.string().nullable(),
  temporaryClone: z.boolean(),
});

const HoldSchema = z.object({ handle: z.string(), owner: z.string(), pid: z.number(), host: z.string(), createdAt: z.string(), expiresAt: z.string().nullable() });
const EntrySchema = z.object({
  source: z.string(),
  sha: z.string(),
  path: z.string(),
  files: z.number(),
  bytes: z.number(),
  createdAt: z.string(),
  lastUsedAt: z.string(),
  holds: z.array(HoldSchema),
});

const ContentsQuerySchema = z.object({ ref: z.string().min(1).max(255), path: z.string().max(4096).default('') });
const ContentsSchema = z.union([
  z.object({
    type: z.literal('tree'),
    sha: z.string(),
    path: z.string(),
    entries: z.array(z.object({ mode: z.string(), type: z.enum(['blob', 'tree', 'commit']), oid: z.string(), name: z.string() })),
  }),
  z.object({ type: z.literal('blob'), sha: z.string(), path: z.string(), size: z.number(), encoding: z.enum(['utf8', 'base64']), content: z.string() }),
]);

/**
 * Snapshots for analysis jobs and reads of any commit without materialising.
 * A read token suffices: snapshots only read sources (a `sync` only records
 * a request, like a webhook would).
 */
export function snapshotRoutes(snapshots: Snapshots, options: { tokens: AuthTokens; defaultHoldMs: number }): FastifyPluginAsyncZod {
  return async (server) => {
    const read = access('read', options.tokens);

    server.post(
      '/sources/:name/snapshots',
      {
        ...read,
        schema: {
          tags: ['snapshots'],
          summary: 'Materialise one commit of a source as a read-only directory',
          description:
            'Resolves `ref` (after a sync under the source lease when `sync` is set) and returns a held snapshot of exactly that ' +
            'commit, shared with every other reader of it. When no sync can be had within `waitMs`, the last synced commit is ' +
            'served with `stale: true`.',
          security: BEARER,
          params: SourceParamsSchema,
          body: SnapshotBodySchema,
          response: { 201: SnapshotSchema, ...errorResponses(400, 403, 404, 409) },
        },
      },
      async (request, reply) => {
        const { ref, sync, waitMs, holdMs } = request.body;
        const snapshot = await snapshots.open(request.params.name, ref, {
          sync,
          waitMs,
          holdMs: holdMs ?? options.defaultHoldMs,
          owner: 'api',
        });
        return reply.code(201).send(snapshot.toJSON());
      },
    );

    server.get(
      '/snapshots',
      { ...read, schema: { tags: ['snapshots'], summary: 'Snapshots on disk with their holds', security: BEARER, response: { 200: z.array(EntrySchema), ...errorResponses() } } },
      async () => snapshots.cache.list().map(snapshotEntryJson),
    );

    server.delete(
      '/snapshots/:handle',
      {
        ...read,
        schema: {
          tags: ['snapshots'],
          summary: 'End a snapshot hold',
          security: BEARER,
          params: z.object({ handle: z.string().min(1).max(64) }),
          response: { 204: z.null().describe('released'), ...errorResponses(403, 404) },
        },
      },
      async (request, reply) => {
        snapshots.release(request.params.handle);
        return reply.code(204).send(null);
      },
    );

    server.get(
      '/sources/:name/contents',
      {
        ...read,
        schema: {
          tags: ['snapshots'],
          summary: 'A file or directory of any commit, read from the mirror without materialising',
          security: BEARER,
          params: SourceParamsSchema,
          querystring: ContentsQuerySchema,
          response: { 200: ContentsSchema, ...errorResponses(400, 404, 409) },
        },
      },
      async (request) => objectAtJson(await snapshots.readAt(request.params.name, request.query.ref, request.query.path)),
    );
  };
}
