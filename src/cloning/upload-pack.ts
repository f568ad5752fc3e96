import { PassThrough, Transform, type Readable, type TransformCallback } from 'node:stream';
import { createGunzip, gunzipSync } from 'node:zlib';
import type { GitProcess, GitRunner } from '../git/runner.js';
import { bufferBody } from '../egress/body.js';

/*
 * git upload-pack in its stateless form, which is what smart HTTP speaks:
 * one process per request, its stdin the client's request body, its stdout
 * the answer, streamed both ways (never held whole). The mirror is only
 * read; hooks and the service user's configuration never apply (the runner's
 * environment), and the few settings a server needs come on the command line.
 */

/** How long one upload-pack may run: a clone of a very large repository over a slow link, not a stalled client forever. */
const UPLOAD_PACK_TIMEOUT_MS = 60 * 60_000;
/** The most a request body (wants, haves, filters) may be once decompressed: far above a real negotiation. */
export const MAX_REQUEST_BYTES = 64 * 1024 * 1024;

/**
 * What a read-only replica offers its cloners: partial clones (filters),
 * and fetching any object reachable from a ref (how a partial clone fetches
 * the blobs it left out), never an object no ref reaches (a deleted branch's
 * leftovers until they are pruned).
 */
const SERVER_CONFIG = ['-c', 'uploadpack.allowFilter=true', '-c', 'uploadpack.allowReachableSHA1InWant=true'];

/** git's arguments that answer one stateless fetch request in `view` (what the pack cache runs for a whole clone's answer). */
export function uploadPackArgv(view: string): string[] {
  return [...SERVER_CONFIG, 'upload-pack', '--stateless-rpc', view];
}

/**
 * A request body read whole and decompressed, when it announced a length of
 * at most `maxBytes` (a clone's wants); undefined otherwise (then it is
 * streamed to upload-pack as it comes).
 * @throws RequestTooLargeError when it decompresses past MAX_REQUEST_BYTES; zlib's error for bad gzip; bufferBody's.
 */
export async function readSmallBody(request: { body: Readable; gzip: boolean; contentLength: number | undefined }, maxBytes: number): Promise<Buffer | undefined> {
  if (request.contentLength === undefined || request.contentLength > maxBytes) return undefined;
  const body = await bufferBody(request.body, maxBytes);
  if (!request.gzip) return body;
  try {
    return gunzipSync(body, { maxOutputLength: MAX_REQUEST_BYTES });
  } catch (error) {
    if (error instanceof RangeError) throw new RequestTooLargeError();
    throw error;
  }
}

/** A request body larger than MAX_REQUEST_BYTES (after decompression). */
export class RequestTooLargeError extends Error {
  constructor() {
    super(`the request body is over ${MAX_REQUEST_BYTES} bytes`);
    this.name = new.target.name;
  }
}

/** Longest one pack-objects of the pack cache may run: as long as the upload-pack it answers. */
export const PACK_GENERATION_TIMEOUT_MS = UPLOAD_PACK_TIMEOUT_MS;

/**
 * The pack cache as upload-pack meets it (see pack-cache/): `-c` arguments
 * that make one upload-pack of `view` run the cache's hook instead of
 * pack-objects (git honours `uploadpack.packObjectsHook` from the command
 * line, never from a repository's config), released when it ends.
 */
export interface PackObjectsHook {
  attach(view: string): { args: string[]; release(): void };
}

/** One upload-pack for one request, stopped when the client goes away or after its time. */
function startUploadPack(runner: GitRunner, mirror: string, args: string[], options: { gitProtocol: string | undefined; packObjects?: PackObjectsHook | undefined }): GitProcess {
  const hook = options.packObjects?.attach(mirror);
  try {
    const git = runner.start([...SERVER_CONFIG, ...(hook?.args ?? []), 'upload-pack', '--stateless-rpc', ...args, mirror], {
      timeoutMs: UPLOAD_PACK_TIMEOUT_MS,
      ...(options.gitProtocol === undefined ? {} : { gitProtocol: options.gitProtocol }),
    });
    if (hook) git.child.once('close', hook.release);
    return git;
  } catch (error) {
    hook?.release();
    throw error;
  }
}

/**
 * The ref advertisement (`GET …/info/refs?service=git-upload-pack`). Protocol
 * v0/v1 answers start with the service line; v2 (`gitProtocol` `version=2`)
 * answers with its capabilities only, as git-http-backend does.
 */
export function advertisement(runner: GitRunner, mirror: string, gitProtocol: string | undefined): { git: GitProcess; body: Readable } {
  const git = startUploadPack(runner, mirror, ['--advertise-refs'], { gitProtocol });
  if (isV2(gitProtocol)) return { git, body: git.child.stdout };
  const body = new PassThrough();
  body.write(pktLine('# service=git-upload-pack\n'));
  body.write('0000');
  git.child.stdout.pipe(body);
  return { git, body };
}

/** A fetch or clone (`POST …/git-upload-pack`): the request body in, the pack out (from the pack cache when `packObjects` is given). */
export function uploadPack(
  runner: GitRunner,
  mirror: string,
  request: { body: Readable; gzip: boolean; gitProtocol: string | undefined; packObjects?: PackObjectsHook | undefined },
): { git: GitProcess; body: Readable } {
  const git = startUploadPack(runner, mirror, [], request);
  const input = request.gzip ? request.body.pipe(createGunzip()) : request.body;
  // A body that fails (too large, bad gzip, the client gone) ends the process: its answer would be garbage.
  const capped = input.pipe(new ByteCap(MAX_REQUEST_BYTES));
  // The rest of such a body is not read: the connection is closed (left paused, it would linger until the server's request timeout).
  for (const stream of [request.body, input, capped]) {
    stream.once('error', () => {
      git.stop();
      request.body.destroy();
    });
  }
  capped.pipe(git.child.stdin);
  return { git, body: git.child.stdout };
}

function isV2(gitProtocol: string | undefined): boolean {
  return gitProtocol?.split(':').includes('version=2') ?? false;
}

/** A pkt-line: four hex digits of length (itself included), then the data. */
function pktLine(data: string): string {
  return (Buffer.byteLength(data) + 4).toString(16).padStart(4, '0') + data;
}

/** Passes bytes through until `max`, then fails with RequestTooLargeError. */
class ByteCap extends Transform {
  #seen = 0;

  constructor(private readonly max: number) {
    super();
  }

  override _transform(chunk: Buffer, _encoding: BufferEncoding, done: TransformCallback): void {
    this.#seen += chunk.length;
    if (this.#seen > this.max) done(new RequestTooLargeError());
    else done(null, chunk);
  }
}
