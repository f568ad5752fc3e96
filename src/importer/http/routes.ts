import { z } from 'zod';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { RouteContext } from '../../server/module-routes.js';
import { access, BEARER, errorResponses } from '../../server/routes/common.js';
import type { Importer } from '../module.js';
import { importStatusAnswer } from '../status.js';
import { inScope } from '../../server/auth.js';
import { ImportNotFoundError } from '../errors.js';

const NameParams = z.object({ name: z.string().min(1).max(200) });

const CreateBody = z
  .object({
    project: z.string().min(3).max(200).describe('`owner/repo`'),
    name: z.string().min(1).max(200).optional(),
    apiUrl: z.string().min(1).max(2000).optional().describe('default https://api.github.com; GitHub Enterprise: https://host/api/v3'),
    credentials: z.array(z.string().min(1).max(64)).max(20).optional().describe('names of credentials bound to the API host (never tokens)'),
    concurrency: z.number().int().min(1).max(100).optional(),
  })
  .strict();

const Counts = z.record(z.string(), z.number());
const Source = z.object({ name: z.string(), state: z.string(), lastSyncedAt: z.string().nullable() }).nullable();

/** The status JSON (a contract; see importer/status.ts). */
export const ImportStatusSchema = z.object({
  name: z.string(),
  owner: z.string(),
  repo: z.string(),
  apiUrl: z.string(),
  state: z.enum(['pending', 'started', 'synced', 'failed', 'cancelled']),
  stage: z.string(),
  counts: z.object({ fetched: Counts, imported: Counts }),
  requests: z.object({ total: z.number(), counted: z.number(), notModified: z.number(), retried: z.number(), rateLimitWaits: z.number(), secondaryLimited: z.number() }),
  refreshes: z.object({ waiting: z.number(), oldestWaitingS: z.number().nullable() }),
  startedAt: z.string().nullable(),
  finishedAt: z.string().nullable(),
  durationS: z.number().nullable(),
  failures: z.array(z.object({ type: z.string(), id: z.string(), error: z.string() })),
  sources: z.object({ repository: Source, wiki: Source }),
  mode: z.string(),
  run: z.number(),
  failure: z.string().nullable(),
  rate: z.array(z.object({ credential: z.string().nullable(), limit: z.number().nullable(), remaining: z.number().nullable(), resetAt: z.string().nullable() })),
  rateLimitWaitS: z.number(),
  nextSyncAt: z.string().nullable(),
  retryAt: z.string().nullable(),
  credentials: z.array(z.string()),
  concurrency: z.number(),
});

/** `/api/imports…`: create, list, status, and sync/resume/cancel (each records what is wanted and nudges a worker). */
export function importRoutes(importer: Importer, { tokens, serverPaths }: Pick<RouteContext, 'tokens' | 'serverPaths'>): FastifyPluginAsyncZod {
  // The CLI's status JSON, as API callers are shown it (no directory of the server).
  const statusAnswer = async (nameOrRecord: Parameters<Importer['status']>[0]) => importStatusAnswer(await importer.status(nameOrRecord), serverPaths);
  return async (server) => {
    const admin = access('admin', tokens);
    const read = access('scoped-read', tokens);

    server.post(
      '/imports',
      {
        ...admin,
        schema: {
          tags: ['imports'],
          summary: 'Import a GitHub project',
          description: 'Records the import (or, for a project already imported under that name, a resume) and nudges a worker; 202 once recorded.',
          security: BEARER,
          body: CreateBody,
          response: { 202: ImportStatusSchema, ...errorResponses(400, 403, 409) },
        },
      },
      async (request, reply) => reply.code(202).send(await statusAnswer(await importer.create(request.body))),
    );

    server.get(
      '/imports',
      { ...read, schema: { tags: ['imports'], summary: 'List imports with their status', security: BEARER, response: { 200: z.array(ImportStatusSchema), ...errorResponses() } } },
      async (request) => Promise.all((await importer.list()).filter((record) => inScope(request, record.name)).map((record) => statusAnswer(record))),
    );

    server.get(
      '/imports/:name',
      { ...read, schema: { tags: ['imports'], summary: 'The status of one import', security: BEARER, params: NameParams, response: { 200: ImportStatusSchema, ...errorResponses(404) } } },
      async (request) => {
        if (!inScope(request, request.params.name)) throw new ImportNotFoundError(request.params.name);
        return statusAnswer(request.params.name);
      },
    );

    const actions = { sync: (name: string) => importer.requestSync(name), resume: (name: string) => importer.resume(name), cancel: (name: string) => importer.cancel(name) };
    for (const [action, act] of Object.entries(actions)) {
      server.post(
        `/imports/:name/${action}`,
        {
          ...admin,
          schema: {
            tags: ['imports'],
            summary: `${action[0]!.toUpperCase()}${action.slice(1)} an import`,
            security: BEARER,
            params: NameParams,
            response: { 202: ImportStatusSchema, ...errorResponses(403, 404, 409) },
          },
        },
        async (request, reply) => reply.code(202).send(await statusAnswer(await act(request.params.name))),
      );
    }
  };
}
