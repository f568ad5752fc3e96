import type { FastifyRequest } from 'fastify';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { formatDuration } from '../util/duration.js';
import type { RouteContext } from '../server/module-routes.js';
import { callerOf, inScope } from '../server/auth.js';
import { SourceNotFoundError } from '../store/errors.js';
import { NotFoundError } from '../errors.js';
import { relay, type ShardReads } from '../cluster/api.js';
import { access, BEARER, errorResponses } from '../server/routes/common.js';
import { objectAtJson, snapshotAnswerJson, snapshotEntryAnswerJson } from './json.js';
import type { Snapshots } from './service.js';
import { ATTR, withSpan } from '../tracing/index.js';

const SourceParamsSchema = z.object({ name: z.string().min(1).max(200) });

/** The request body; `holdMs` is capped by FORGESYNC_SNAPSHOT_API_MAX_HOLD (`maxHoldMs`), which the OpenAPI document shows too. */
function snapshotBodySchema(maxHoldMs: number) {
  const cap = `${maxHoldMs} ms (${formatDuration(maxHoldMs)}, FORGESYNC_SNAPSHOT_API_MAX_HOLD)`;
  return z.strictObject({
    ref: z.string().min(1).max(255).describe('branch, tag or commit sha'),
    sync: z.boolean().default(false).describe('sync the mirror first, under the source lease'),
    waitMs: z.number().int().min(0).max(600_000).default(30_000).describe('how long to wait for that sync before serving the last synced commit marked stale'),
    holdMs: z
      .number()
      .int()
      .min(1000)
      .max(maxHoldMs, {
        error: `must be at most ${cap}: ask for a shorter hold and open the snapshot again when it lapses, or have the operator hold it longer with forgesync snapshot --hold`,
      })
      .optional()
      .describe(`protection from eviction, at most ${cap} (default: FORGESYNC_SNAPSHOT_HOLD, capped likewise)`),
  });
}

// No `path`: a directory on the server is no business of API callers (the CLI, the operator's, prints it).
const SnapshotSchema = z.object({
  source: z.string(),
  ref: z.string(),
  sha: z.string(),
  stale: z.boolean().describe('true when served from the last synced state because no sync could be had within waitMs'),
  handle: z.string().describe('release with DELETE /api/snapshots/<handle>'),
  expiresAt: z.string().nullable(),
  temporaryClone: z.boolean(),
});

const HoldSchema = z.object({
  handle: z.string(),
  owner: z.string(),
  pid: z.number(),
  host: z.string(),
  createdAt: z.string(),
  expiresAt: z.string().nullable(),
  creator: z.string().nullable().describe('id of the token that made it (only your own holds are listed)'),
});
const EntrySchema = z.object({
  source: z.string(),
  sha: z.string(),
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
 * Who makes and releases API holds: the id of the caller's token. With no
 * token configured (loopback only, everyone admin), requests without one share
 * this identity: there is nothing to tell them apart by.
 */
const NO_TOKEN = 'no-token';


/**
 * Snapshots for analysis jobs and reads of any commit without materialising.
 * A read token suffices: snapshots only read sources (a `sync` only records
 * a request, like a webhook would). Because any read token may hold, API holds
 * are bounded (the byte budget, `maxHoldMs`) and belong to the token that made
 * them: only it lists and releases them.
 */
export function snapshotRoutes(snapshots: Snapshots, options: RouteContext & { shardReads?: ShardReads; defaultHoldMs: number; maxHoldMs: number }): FastifyPluginAsyncZod {
  const { shardReads } = options;
  const creatorOf = (request: FastifyRequest): string => (options.caller ?? callerOf)(request) ?? NO_TOKEN;
  return async (server) => {
    // The configured default hold never outlasts the API's cap.
    const defaultHoldMs = Math.min(options.defaultHoldMs, options.maxHoldMs);
    const deps: SnapshotRouteDeps = { snapshots, shardReads, creatorOf, read: access('scoped-read', options.tokens) };
    openSnapshotRoute(server, deps, { defaultHoldMs, maxHoldMs: options.maxHoldMs });
    holdRoutes(server, deps);
    contentsRoute(server, deps);
  };
}

type SnapshotServer = Parameters<FastifyPluginAsyncZod>[0];

/** What the snapshot routes share: the service, the other shards (distributed), who the caller is, the read guard. */
interface SnapshotRouteDeps {
  snapshots: Snapshots;
  shardReads: ShardReads | undefined;
  creatorOf: (request: FastifyRequest) => string;
  read: ReturnType<typeof access>;
}

/** `POST /sources/:name/snapshots`: a held snapshot of one commit (on the shard that holds the source). */
function openSnapshotRoute(server: SnapshotServer, { snapshots, shardReads, creatorOf, read }: SnapshotRouteDeps, holds: { defaultHoldMs: number; maxHoldMs: number }): void {
  const { defaultHoldMs } = holds;
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
          'served with `stale: true`. Read its files with `GET /api/sources/<name>/contents?ref=<sha>`; where it lies on the server is not ' +
          'shown (the operator\'s `forgesync snapshot list --json` does).',
        security: BEARER,
        params: SourceParamsSchema,
        body: snapshotBodySchema(holds.maxHoldMs),
        response: { 201: SnapshotSchema, ...errorResponses(400, 403, 404, 409) },
      },
    },
    async (request, reply) => {
      if (!inScope(request, request.params.name)) throw new SourceNotFoundError(request.params.name);
      const remote = await shardReads?.endpointFor(request.params.name);
      if (remote) return shardReads!.forward(remote, request, reply, creatorOf(request));
      const { ref, sync, waitMs, holdMs } = request.body;
      const snapshot = await withSpan('snapshot open', { [ATTR.source]: request.params.name, 'forgesync.snapshot.sync': sync }, () => snapshots.open(request.params.name, ref, {
        sync,
        waitMs,
        holdMs: holdMs ?? defaultHoldMs,
        owner: 'api',
        creator: creatorOf(request),
      }));
      return reply.code(201).send(snapshotAnswerJson(snapshot.toJSON()));
    },
  );
}

/** `/snapshots`: the holds the caller's token made, listed and released (on every shard). */
function holdRoutes(server: SnapshotServer, { snapshots, shardReads, creatorOf, read }: SnapshotRouteDeps): void {
  server.get(
    '/snapshots',
    {
      ...read,
      schema: {
        tags: ['snapshots'],
        summary: 'Snapshots on disk, each with the holds your token made',
        description: 'Holds made by other tokens, the CLI or library callers are not listed (`forgesync snapshot list` shows every hold).',
        security: BEARER,
        response: { 200: z.array(EntrySchema), ...errorResponses() },
      },
    },
    async (request) => {
      const creator = creatorOf(request);
      const entries = snapshots.listCreatedBy(creator).map(snapshotEntryAnswerJson);
      // Distributed: every other shard's worker lists its own, all asked at once.
      const others = await Promise.all(((await shardReads?.otherEndpoints()) ?? []).map((shard) => shardReads!.readJson<z.output<typeof EntrySchema>[]>(shard, request.url, creator)));
      return [...entries, ...others.flat()];
    },
  );

  server.delete(
    '/snapshots/:handle',
    {
      ...read,
      schema: {
        tags: ['snapshots'],
        summary: 'End a snapshot hold your token made',
        description: 'Any other handle answers 404, exactly like one that does not exist.',
        security: BEARER,
        params: z.object({ handle: z.string().min(1).max(64) }),
        response: { 204: z.null().describe('released'), ...errorResponses(403, 404) },
      },
    },
    async (request, reply) => {
      const creator = creatorOf(request);
      try {
        snapshots.releaseCreatedBy(request.params.handle, creator);
        return reply.code(204).send(null);
      } catch (error) {
        if (!(error instanceof NotFoundError) || !shardReads) throw error;
        // Distributed: the hold is on the shard that made the snapshot; the first that has it releases it.
        for (const shard of await shardReads.otherEndpoints()) {
          const answer = await shardReads.send(shard, { method: 'DELETE', url: request.url }, creator);
          if (answer.status === 404) {
            answer.body?.resume();
            continue;
          }
          return relay(reply, answer);
        }
        throw error;
      }
    },
  );
}

/** `GET /sources/:name/contents`: a file or directory of any commit (on the shard that holds the source). */
function contentsRoute(server: SnapshotServer, { snapshots, shardReads, creatorOf, read }: SnapshotRouteDeps): void {
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
    async (request, reply) => {
      if (!inScope(request, request.params.name)) throw new SourceNotFoundError(request.params.name);
      const remote = await shardReads?.endpointFor(request.params.name);
      if (remote) return shardReads!.forward(remote, request, reply, creatorOf(request));
      return objectAtJson(await snapshots.readAtHere(request.params.name, request.query.ref, request.query.path));
    },
  );
}
