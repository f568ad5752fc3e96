import type { Readable } from 'node:stream';
import type { FastifyReply } from 'fastify';
import { bufferBody } from '../../egress/body.js';
import { callerOf } from '../../server/auth.js';
import type { LfsHttpRequest } from '../api.js';
import type { LfsOptions } from '../module.js';
import { isOid } from '../pointer.js';

/*
 * Git LFS served from forgesync (the batch API, download only, and the
 * objects themselves), under `/git/<name>.git/info/lfs/`, so that `git
 * clone` from forgesync with git-lfs checks out real files. The cloning
 * module's git route authenticates the caller and hands these requests
 * over (one route, so that `/git/*` stays unambiguous).
 *
 * - `POST …/objects/batch`: answered from the registry alone (any api
 *   process can), offering only the objects the source references and has
 *   stored; every other object gets the batch API's per-object 404. The
 *   hrefs point at forgesync itself (the host the caller used, as the
 *   server's trusted-proxy settings resolve it) and carry the caller's own
 *   Authorization as the action's header, which git-lfs sends with the
 *   download. `upload` is refused: the copy is read-only.
 * - `GET …/objects/<oid>`: streams the stored file, for an object the
 *   source references; in distributed mode from the worker of the source's
 *   shard, where the file is.
 */

const LFS_JSON = 'application/vnd.git-lfs+json';
/** Largest batch request read. */
const MAX_BATCH_BYTES = 1024 * 1024;
/** Objects one batch request may name. */
const MAX_BATCH_OBJECTS = 1000;
const OBJECT_PATH = /^objects\/([0-9a-f]{64})$/;

export async function serveLfs(lfs: LfsHttpRequest, options: LfsOptions): Promise<FastifyReply> {
  const { request, reply } = lfs;
  if (lfs.path === 'objects/batch') {
    if (request.method !== 'POST') return message(reply, 405, 'the batch API takes POST');
    return batch(lfs, options);
  }
  const oid = OBJECT_PATH.exec(lfs.path)?.[1];
  if (!oid) return message(reply, 404, 'not a Git LFS path');
  if (request.method !== 'GET' && request.method !== 'HEAD') return message(reply, 405, 'objects are read with GET; this copy is read-only');
  return download(lfs, oid, options);
}

async function batch(lfs: LfsHttpRequest, options: LfsOptions): Promise<FastifyReply> {
  const { request, reply, name } = lfs;
  const source = await options.sources.findSource(name);
  if (!source) return message(reply, 404, `repository "${name}" not found`);
  // Refused before a byte is read when announced too large; a longer chunked body is cut off at the cap.
  if (Number(request.headers['content-length'] ?? 0) > MAX_BATCH_BYTES) return message(reply, 413, `the batch request is over ${MAX_BATCH_BYTES} bytes`);
  const body = await readJson(request.body);
  if (body === undefined) return message(reply, 422, `the batch request is not JSON of at most ${MAX_BATCH_BYTES} bytes`);
  const { operation, objects } = body as { operation?: unknown; objects?: unknown };
  if (operation === 'upload') return message(reply, 403, 'forgesync: this copy is read-only; push LFS objects to the upstream instead');
  if (operation !== 'download') return message(reply, 422, 'operation must be download');
  if (!Array.isArray(objects) || objects.length > MAX_BATCH_OBJECTS) return message(reply, 422, `objects must be a list of at most ${MAX_BATCH_OBJECTS}`);
  const asked = objects.map((object: { oid?: unknown; size?: unknown }) => ({ oid: object?.oid, size: object?.size }));
  const present = await options.objects.present(source.id, asked.map((object) => object.oid).filter(isOid));
  const base = `${request.protocol}://${request.host}/git/${name.split('/').map(encodeURIComponent).join('/')}.git/info/lfs/objects/`;
  const authorization = request.headers.authorization;
  const answers = asked.map(({ oid, size }) => {
    const stored = isOid(oid) ? present.get(oid) : undefined;
    if (stored === undefined) return { oid, size, error: { code: 404, message: 'Object does not exist' } };
    const header = authorization ? { Authorization: authorization } : undefined;
    return { oid, size: stored, authenticated: true, actions: { download: { href: `${base}${oid}`, ...(header ? { header } : {}), expires_in: 3600 } } };
  });
  // The answer carries the caller's Authorization: no cache may keep it.
  return reply.code(200).header('content-type', LFS_JSON).header('cache-control', 'no-store').send(JSON.stringify({ transfer: 'basic', objects: answers, hash_algo: 'sha256' }));
}

async function download(lfs: LfsHttpRequest, oid: string, options: LfsOptions): Promise<FastifyReply> {
  const { request, reply, name } = lfs;
  const source = await options.sources.findSource(name);
  if (!source) return message(reply, 404, `repository "${name}" not found`);
  const remote = await lfs.shardFiles?.endpointFor(name);
  if (remote) return lfs.shardFiles!.forward(remote, request, reply, callerOf(request) ?? 'lfs');
  const stored = (await options.objects.present(source.id, [oid])).get(oid);
  const file = stored === undefined ? undefined : await options.files.open(oid);
  if (!file) return message(reply, 404, 'Object does not exist');
  reply.raw.once('close', () => file.stream.destroy());
  return reply.code(200).header('content-type', 'application/octet-stream').header('content-length', String(file.size)).header('cache-control', 'private, max-age=0').send(file.stream);
}

/**
 * The request body parsed as JSON, or undefined when it is longer than
 * MAX_BATCH_BYTES or not JSON. git-lfs's media type arrives as a stream (the
 * git routes' raw parser); a client sending `application/json` had it parsed
 * by the server already (within its body limit).
 */
async function readJson(body: Readable | unknown): Promise<unknown> {
  if (body === null || typeof body !== 'object') return undefined;
  if (typeof (body as Readable).on !== 'function' || typeof (body as Readable)[Symbol.asyncIterator] !== 'function') return body;
  try {
    return JSON.parse((await bufferBody(body as Readable, MAX_BATCH_BYTES)).toString('utf8'));
  } catch {
    return undefined;
  }
}

/** An error as the batch API has them: `{ "message": … }` in its media type. */
function message(reply: FastifyReply, status: number, text: string): FastifyReply {
  return reply.code(status).header('content-type', LFS_JSON).send(JSON.stringify({ message: text }));
}
