import { Readable } from 'node:stream';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { GitProcess, GitRunner } from '../../git/runner.js';
import { authenticate, callerOf, inScope, type AuthTokens } from '../../server/auth.js';
import type { ShardReads } from '../../cluster/api.js';
import { header } from '../../server/routes/common.js';
import type { LfsApi } from '../../lfs/api.js';
import { advertisement, MAX_REQUEST_BYTES, readSmallBody, uploadPack, type PackObjectsHook } from '../upload-pack.js';
import { CACHED_REQUEST_MAX_BYTES, type CloneResponses } from '../pack-cache/responses.js';

/** What the routes need: where a source's mirror is (undefined: no such source, or not cloned yet), and the git runner. */
export interface GitRouteOptions {
  tokens: AuthTokens;
  runner: GitRunner;
  mirrorOf(name: string): Promise<string | undefined>;
  /** Distributed mode: a source whose mirror is on another shard is served by that shard's worker (both ways streamed). */
  shardFiles?: ShardReads | undefined;
  /** The pack cache fetches are answered from; undefined: it is off. */
  packObjects?: PackObjectsHook | undefined;
  /** Whole clones' answers from the same cache; undefined: it is off. */
  responses?: CloneResponses | undefined;
  /** Answers `<name>[.git]/info/lfs/…` (Git LFS) once the caller is authenticated; undefined: those paths are not found. */
  lfs?: LfsApi | undefined;
}

/** `<name>[.git]/<what>`: the name may itself hold slashes; the suffix is optional, as forges have it. */
const PATH = /^(?<name>.+?)(?:\.git)?\/(?<what>info\/refs|git-upload-pack|git-receive-pack)$/;
/** `<name>[.git]/info/lfs/<what>`: Git LFS's batch API and objects, for the lfs module. */
const LFS_PATH = /^(?<name>.+?)(?:\.git)?\/info\/lfs\/(?<what>.+)$/;

const RESULT = 'application/x-git-upload-pack-result';
const NO_CACHE = 'no-cache, max-age=0, must-revalidate';
const READ_ONLY = 'forgesync: this copy is read-only; push to the upstream repository instead\n';
const CHALLENGE = 'Basic realm="forgesync"';

/**
 * Git's smart HTTP under `/git/`: the ref advertisement and upload-pack for
 * clones and fetches (protocol v0/v1 and v2), and a 403 for pushes. A read
 * or admin token is the password of HTTP Basic (any user name) or a Bearer
 * token. git sends its first request without credentials and asks its
 * credential helper on a 401 challenge: such a request is not a failed
 * authentication and is never counted against the address (a CI fan-out
 * from one NAT address must not lock itself out); a wrong token is.
 */
export function gitRoutes(options: GitRouteOptions): FastifyPluginAsyncZod {
  return async (server) => {
    // The request body goes to upload-pack as it arrives (capped there, decompressed when gzip).
    server.addContentTypeParser(['application/x-git-upload-pack-request', 'application/x-git-receive-pack-request', 'application/vnd.git-lfs+json'], (_request, payload, done) => done(null, payload));
    server.route({
      method: ['GET', 'POST'],
      url: '/git/*',
      schema: { hide: true },
      handler: async (request, reply) => {
        const lfs = options.lfs && LFS_PATH.exec((request.params as { '*': string })['*'])?.groups;
        if (lfs) return (await authorized(request, reply, options.tokens, lfs.name!)) ? options.lfs!.serve({ name: lfs.name!, path: lfs.what!, request, reply, shardFiles: options.shardFiles }) : reply;
        const path = PATH.exec((request.params as { '*': string })['*'])?.groups;
        if (!path) return text(reply, 404, 'forgesync: not a git repository path\n');
        const { name, what } = path as { name: string; what: string };
        if (!(await authorized(request, reply, options.tokens, name))) return reply;
        const service = what === 'info/refs' ? (request.query as { service?: string }).service : what;
        if (service === 'git-receive-pack') return text(reply, 403, READ_ONLY);
        if (service !== 'git-upload-pack') return text(reply, 403, 'forgesync: only the smart HTTP protocol is served (git 1.6.6 or later)\n');
        if ((what === 'info/refs') !== (request.method === 'GET')) return text(reply, 405, 'forgesync: method not allowed\n');
        const remote = await options.shardFiles?.endpointFor(name);
        if (remote) return options.shardFiles!.forward(remote, request, reply, callerOf(request) ?? 'git');
        const mirror = await options.mirrorOf(name);
        if (!mirror) return notFound(reply, name);
        const gitProtocol = header(request, 'git-protocol');
        if (request.method === 'GET') return stream(reply, advertisement(options.runner, mirror, gitProtocol), 'application/x-git-upload-pack-advertisement');
        if (Number(request.headers['content-length'] ?? 0) > MAX_REQUEST_BYTES) return text(reply, 413, `forgesync: the request body is over ${MAX_REQUEST_BYTES} bytes\n`);
        return answerFetch(reply, options, { request, mirror, gitProtocol });
      },
    });
  };
}

/**
 * Whether the request carries a token that may read the repository `name`;
 * if not, the answer is sent: 401 with git's challenge, 429, or for a
 * scoped reader outside its scope the 404 of a repository that does not exist.
 */
async function authorized(request: FastifyRequest, reply: FastifyReply, tokens: AuthTokens, name: string): Promise<boolean> {
  if (request.headers.authorization === undefined) {
    // git's first try: not a failure, just the challenge that makes it ask for credentials.
    void text(reply.header('www-authenticate', CHALLENGE), 401, 'forgesync: authentication required\n');
    return false;
  }
  const outcome = await authenticate(request, tokens, { basic: true });
  if ('access' in outcome) {
    if (inScope(request, name)) return true;
    void notFound(reply, name);
    return false;
  }
  if (outcome.refused === 'throttled') {
    void text(reply.header('retry-after', String(outcome.retryAfterS)), 429, `forgesync: too many failed authentications; try again in ${outcome.retryAfterS} s\n`);
  } else {
    void text(reply.header('www-authenticate', CHALLENGE), 401, 'forgesync: the token was not accepted\n');
  }
  return false;
}

/**
 * A fetch (`POST …/git-upload-pack`): from the pack cache when it holds, or
 * is generating, the whole answer to this very request (a clone's: see
 * pack-cache/responses.ts), else upload-pack's own, the body streamed to it.
 */
async function answerFetch(reply: FastifyReply, options: GitRouteOptions, fetch: { request: FastifyRequest; mirror: string; gitProtocol: string | undefined }): Promise<FastifyReply> {
  const { request, mirror, gitProtocol } = fetch;
  const streamed = { body: request.body as Readable, gzip: header(request, 'content-encoding') === 'gzip', gitProtocol, packObjects: options.packObjects };
  if (!options.responses) return stream(reply, uploadPack(options.runner, mirror, streamed), RESULT);
  const length = request.headers['content-length'];
  const whole = await readSmallBody({ ...streamed, contentLength: length === undefined ? undefined : Number(length) }, CACHED_REQUEST_MAX_BYTES).catch(() => null);
  if (whole === null) return text(reply, 400, 'forgesync: the request body could not be read (bad gzip, or too large once decompressed)\n');
  if (whole === undefined) return stream(reply, uploadPack(options.runner, mirror, streamed), RESULT);
  const cached = options.responses.answer(mirror, { body: whole, gitProtocol });
  if (!cached) return stream(reply, uploadPack(options.runner, mirror, { ...streamed, body: Readable.from([whole]), gzip: false }), RESULT);
  reply.raw.once('close', () => cached.destroy());
  return reply.header('content-type', RESULT).header('cache-control', NO_CACHE).send(cached);
}

/** Streams git's answer; git is stopped when the client goes away before it ends. */
function stream(reply: FastifyReply, answer: { git: GitProcess; body: Readable }, type: string): FastifyReply {
  reply.raw.once('close', () => answer.git.stop());
  return reply.header('content-type', type).header('cache-control', NO_CACHE).send(answer.body);
}

/** The answer for a repository that does not exist, or that the caller may not see (the same, so it tells nothing). */
function notFound(reply: FastifyReply, name: string): FastifyReply {
  return text(reply, 404, `forgesync: repository "${name}" not found\n`);
}

function text(reply: FastifyReply, status: number, body: string): FastifyReply {
  return reply.code(status).header('content-type', 'text/plain; charset=utf-8').send(body);
}
