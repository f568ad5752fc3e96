import { z } from 'zod';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { RouteContext } from '../../server/module-routes.js';
import { access, BEARER, errorResponses } from '../../server/routes/common.js';
import type { Feeds } from '../module.js';
import { feedStatusAnswer, type FeedStatus } from '../status.js';

const NameParams = z.object({ name: z.string().min(1).max(100) });

const AddBody = z
  .object({
    name: z.string().min(1).max(100),
    sink: z.string().min(1).max(2000).describe('http(s)://…, nats://host:port/<subject> or file:///dir (inside the feed file root, FORGESYNC_FEED_FILE_ROOT); no credentials in the URL'),
    types: z.array(z.string().min(1).max(100)).max(20).optional().describe('change types; a trailing * matches a prefix'),
    sources: z.string().min(1).max(200).optional().describe('glob over source and import names'),
    secret: z.string().max(200).optional().describe('name of a feed secret the operator defined, bound to the sink host (the signing secret or NATS token; never the secret itself)'),
    secretEnv: z.unknown().optional().describe('replaced by `secret`: a request with it is refused (400)'),
    batch: z.number().int().min(1).max(1000).optional(),
  })
  .strict();

const ReplayBody = z.object({ fromSeq: z.number().int().min(1) }).strict();

/** The status JSON (a contract; see feeds/status.ts). */
export const FeedStatusSchema = z.object({
  name: z.string(),
  sink: z.string().describe('the sink URL, secrets redacted; directories of the server appear as placeholders (`file://<feedFiles>/orders`), as in `lastError`'),
  types: z.array(z.string()).nullable(),
  sources: z.string().nullable(),
  paused: z.boolean(),
  disabled: z.string().nullable(),
  headSeq: z.number(),
  ackedSeq: z.number(),
  lag: z.object({ changes: z.number(), oldestAgeS: z.number() }),
  lastRun: z.object({ operation: z.string(), startedAt: z.string(), finishedAt: z.string(), outcome: z.string(), delivered: z.number() }).nullable(),
  holder: z.string().nullable(),
  skips: z.number(),
  syncRequested: z.boolean(),
  retrying: z.number(),
  deadLetters: z.number(),
  fullSync: z.object({ requested: z.boolean(), running: z.boolean(), progress: z.object({ exported: z.number(), head: z.number().nullable() }) }),
  batch: z.number(),
  secret: z.string().nullable(),
  delivered: z.number(),
  lastError: z.string().nullable(),
  retryAt: z.string().nullable(),
});

const DeadLetterSchema = z.object({ seq: z.number(), key: z.string(), type: z.string().nullable(), subject: z.string().nullable(), attempts: z.number(), lastError: z.string().nullable() });

/** `/api/feeds…`: the same operations as `forgesync feed …`; each records what is wanted and nudges a worker. */
export function feedRoutes(feeds: Feeds, { tokens, serverPaths }: Pick<RouteContext, 'tokens' | 'serverPaths'>): FastifyPluginAsyncZod {
  const answer = (status: FeedStatus) => feedStatusAnswer(status, serverPaths);
  return async (server) => {
    const admin = access('admin', tokens);
    const read = access('read', tokens);
    const tags = ['feeds'];

    server.post(
      '/feeds',
      { ...admin, schema: { tags, summary: 'Add a feed', description: 'Its first run is a full sync of everything in scope.', security: BEARER, body: AddBody, response: { 201: FeedStatusSchema, ...errorResponses(400, 403, 409) } } },
      async (request, reply) => reply.code(201).send(answer(await feeds.add(request.body))),
    );

    server.get('/feeds', { ...read, schema: { tags, summary: 'List feeds with their status', security: BEARER, response: { 200: z.array(FeedStatusSchema), ...errorResponses() } } }, async () => (await feeds.list()).map(answer));

    server.get(
      '/feeds/:name',
      { ...read, schema: { tags, summary: 'The status of one feed', security: BEARER, params: NameParams, response: { 200: FeedStatusSchema, ...errorResponses(404) } } },
      async (request) => answer(await feeds.status(request.params.name)),
    );

    server.delete(
      '/feeds/:name',
      { ...admin, schema: { tags, summary: 'Remove a feed', security: BEARER, params: NameParams, response: { 204: z.null(), ...errorResponses(403, 404) } } },
      async (request, reply) => {
        await feeds.remove(request.params.name);
        return reply.code(204).send(null);
      },
    );

    const actions = {
      sync: { summary: 'Request a partial sync (the changes since the cursor)', act: (name: string) => feeds.sync(name) },
      resync: { summary: 'Request a full sync (the current state of everything in scope)', act: (name: string) => feeds.resync(name) },
      pause: { summary: 'Pause a feed (changes are kept; lag grows)', act: (name: string) => feeds.pause(name) },
      resume: { summary: 'Resume a paused or disabled feed', act: (name: string) => feeds.resume(name) },
    };
    for (const [action, { summary, act }] of Object.entries(actions)) {
      server.post(
        `/feeds/:name/${action}`,
        { ...admin, schema: { tags, summary, security: BEARER, params: NameParams, response: { 202: FeedStatusSchema, ...errorResponses(403, 404) } } },
        async (request, reply) => reply.code(202).send(answer(await act(request.params.name))),
      );
    }

    server.post(
      '/feeds/:name/replay',
      { ...admin, schema: { tags, summary: 'Deliver again every change in scope from a sequence number on', security: BEARER, params: NameParams, body: ReplayBody, response: { 202: FeedStatusSchema, ...errorResponses(400, 403, 404) } } },
      async (request, reply) => reply.code(202).send(answer(await feeds.replay(request.params.name, request.body.fromSeq))),
    );

    server.get(
      '/feeds/:name/dead-letters',
      { ...read, schema: { tags, summary: 'Changes that failed too often', security: BEARER, params: NameParams, response: { 200: z.array(DeadLetterSchema), ...errorResponses(404) } } },
      async (request) => (await feeds.deadLetters(request.params.name)).map((letter) => ({ ...letter, lastError: serverPaths.hide(letter.lastError) })),
    );

    server.post(
      '/feeds/:name/dead-letters/retry',
      { ...admin, schema: { tags, summary: 'Send the dead letters again', security: BEARER, params: NameParams, response: { 202: z.object({ retried: z.number() }), ...errorResponses(403, 404) } } },
      async (request, reply) => reply.code(202).send({ retried: await feeds.retryDeadLetters(request.params.name) }),
    );
  };
}
