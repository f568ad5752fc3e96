import { Readable } from 'node:stream';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { ConflictError, InvalidInputError, NotFoundError } from '../errors.js';
import type { ShardRepository } from './store/shards.js';
import { ShardUnreachableError, SourceNotPlacedError } from './errors.js';

/**
 * Carries the identity of the api's caller to the worker (the first 16 hex
 * digits of its token's SHA-256, never the token): what a caller makes there
 * (a snapshot hold) must be theirs, not the cluster's. Trusted only with the
 * cluster token (cluster/internal-server.ts).
 */
export const CALLER_HEADER = 'forgesync-caller';

/**
 * Response headers worth passing back (a page's links, a redirect, validators, a download's name); hop-by-hop and length
 * headers are the proxy's own.
 */
const PASSED_HEADERS = ['content-type', 'retry-after', 'cache-control', 'www-authenticate', 'link', 'location', 'etag', 'last-modified', 'content-disposition'];

/** A request to a worker: a JSON body, or a stream with the headers that describe it. */
export interface ShardRequest {
  method: string;
  url: string;
  body?: unknown;
  /** The caller's headers that go on: git's protocol, and with a streamed body its content type and encoding. */
  headers?: Record<string, string>;
  /**
   * What a redirect from the worker means: `refuse` (the default) — a refusal, as a worker that does not take the
   * cluster token sends its login redirect; `relay` — an answer of the route itself (the GitHub-compatible API
   * redirects archive downloads), passed on with its `Location` and never followed.
   */
  redirects?: 'refuse' | 'relay';
}

export interface ShardReadsOptions {
  shards: ShardRepository;
  /** The shard whose files this process has (it runs that shard's worker), or null. */
  localShard: string | null;
  /** The shared secret of the internal endpoints; undefined when none is configured. */
  clusterToken: string | undefined;
  /** The shard source `name` is placed on (null: none yet). @throws NotFoundError */
  shardOf: (name: string) => Promise<string | null>;
}

/** A shard's worker, where reads of its sources' files are sent. */
export interface ShardTarget {
  shard: string;
  endpoint: string;
}

/** A read answered elsewhere, as the caller gets it. */
export interface ForwardedResponse {
  status: number;
  headers: Record<string, string>;
  body: Readable | null;
}

/**
 * Reads that need a source's files (snapshots, contents) in distributed
 * mode: answered here when this process runs the worker of the source's
 * shard, else by that shard's worker, through its internal endpoint, the
 * answer streamed back as it comes.
 */
export class ShardReads {
  constructor(private readonly options: ShardReadsOptions) {}

  /**
   * The internal endpoint answering reads of source `name`, or null when
   * this process has its files.
   * @throws NotFoundError, SourceNotPlacedError, ShardUnreachableError
   */
  async endpointFor(name: string): Promise<ShardTarget | null> {
    const shard = await this.options.shardOf(name);
    if (shard === null) throw new SourceNotPlacedError(name);
    if (shard === this.options.localShard) return null;
    const [found] = await this.options.shards.endpoints(shard);
    if (!found) throw new ShardUnreachableError(shard, 'never registered');
    return { shard, endpoint: this.#usable(found) };
  }

  /** The other shards' endpoints, for reads that span every shard (a listing); down shards are left out. */
  async otherEndpoints(): Promise<ShardTarget[]> {
    const all = await this.options.shards.endpoints();
    return all.filter((entry) => entry.id !== this.options.localShard && entry.state !== 'down').map((entry) => ({ shard: entry.id, endpoint: this.#usable(entry) }));
  }

  /**
   * Sends `request` (its method, URL and JSON body, which the api validated
   * already) to a worker's endpoint, as the caller `caller`; resolves with
   * the answer's head, its body a stream. Aborts with `signal` (the caller
   * went away).
   * @throws ShardUnreachableError when the worker does not answer
   */
  async send(target: ShardTarget, request: ShardRequest, caller: string, signal?: AbortSignal): Promise<ForwardedResponse> {
    const token = this.options.clusterToken;
    if (token === undefined) throw new ShardUnreachableError(target.shard, 'is not asked: this process has no FORGESYNC_CLUSTER_TOKEN');
    const hasBody = request.body !== undefined && request.method !== 'GET' && request.method !== 'HEAD';
    // A stream (git's request body) goes on as it arrives, with the headers that say what it is; anything else as JSON.
    const streamed = hasBody && request.body instanceof Readable;
    const bodyHeaders = { ...request.headers, ...(hasBody && !streamed ? { 'content-type': 'application/json' } : {}) };
    let response: Response;
    try {
      response = await fetch(`${target.endpoint}${request.url}`, {
        method: request.method,
        headers: { authorization: `Bearer ${token}`, [CALLER_HEADER]: caller, ...bodyHeaders },
        ...(streamed ? { body: request.body as Readable, duplex: 'half' } : hasBody ? { body: JSON.stringify(request.body) } : {}),
        // The token goes to the registered endpoint only, never where a redirect points.
        redirect: 'manual',
        ...(signal ? { signal } : {}),
      });
    } catch (error) {
      if (signal?.aborted) throw error;
      throw new ShardUnreachableError(target.shard, `did not answer (${describeFetchError(error)})`, { endpoint: target.endpoint, cause: error });
    }
    const redirected = response.status >= 300 && response.status < 400;
    if (response.status === 401 || response.status === 403 || (redirected && request.redirects !== 'relay')) {
      await response.body?.cancel();
      throw new ShardUnreachableError(target.shard, `refused the forwarded read (HTTP ${response.status}): the processes must share one FORGESYNC_CLUSTER_TOKEN`, { endpoint: target.endpoint });
    }
    const headers: Record<string, string> = {};
    for (const name of PASSED_HEADERS) {
      const value = response.headers.get(name);
      if (value !== null) headers[name] = value;
    }
    return { status: response.status, headers, body: response.body ? Readable.fromWeb(response.body as import('node:stream/web').ReadableStream) : null };
  }

  /**
   * A JSON read from a worker's endpoint (`url` under /api) as the caller
   * `caller`: its body, or the worker's refusal as the error of its kind.
   * @throws NotFoundError, ConflictError, InvalidInputError (as the worker answered), ShardUnreachableError
   */
  async readJson<T>(target: ShardTarget, url: string, caller: string): Promise<T> {
    const answer = await this.send(target, { method: 'GET', url }, caller);
    const chunks: Buffer[] = [];
    if (answer.body) for await (const chunk of answer.body) chunks.push(chunk as Buffer);
    // Decoded whole: a character split across two chunks stays one character.
    const text = Buffer.concat(chunks).toString('utf8');
    if (answer.status === 200) return JSON.parse(text) as T;
    const message = (safeJson(text) as { message?: string } | undefined)?.message ?? `HTTP ${answer.status}`;
    if (answer.status === 404) throw new NotFoundError(message);
    if (answer.status === 409) throw new ConflictError(message);
    if (answer.status === 400) throw new InvalidInputError(message);
    throw new ShardUnreachableError(target.shard, `answered HTTP ${answer.status}: ${message}`, { endpoint: target.endpoint });
  }

  /** Answers `request` from the worker at `target` into `reply`, streamed. */
  async forward(target: ShardTarget, request: FastifyRequest, reply: FastifyReply, caller: string): Promise<FastifyReply> {
    const controller = new AbortController();
    // The caller hanging up ends the forwarded read too (a snapshot being made carries on there, held as asked).
    reply.raw.once('close', () => {
      if (!reply.raw.writableFinished) controller.abort();
    });
    // git's protocol always; what a streamed body is, with it (a JSON body is sent anew, as JSON).
    const names = request.body instanceof Readable ? ['git-protocol', 'content-type', 'content-encoding'] : ['git-protocol'];
    const headers: Record<string, string> = {};
    for (const name of names) {
      const value = request.headers[name];
      if (typeof value === 'string') headers[name] = value;
    }
    return relay(reply, await this.send(target, { method: request.method, url: request.url, body: request.body, headers }, caller, controller.signal));
  }

  #usable(entry: { id: string; state: string; endpoint: string | null }): string {
    if (entry.state === 'down') throw new ShardUnreachableError(entry.id, 'is down (no heartbeat lately)');
    if (entry.endpoint === null) throw new ShardUnreachableError(entry.id, 'runs no internal endpoint (it needs FORGESYNC_CLUSTER_TOKEN and FORGESYNC_JOBS_URL)');
    return entry.endpoint;
  }
}

/** Passes a forwarded answer on to the caller as it came (status, headers, streamed body). */
export function relay(reply: FastifyReply, answer: ForwardedResponse): FastifyReply {
  return reply.code(answer.status).headers(answer.headers).send(answer.body);
}

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

/**
 * fetch() hides the socket error in `cause`: its code (`ECONNREFUSED`) says
 * more than "fetch failed". Only the code: the cause's message names the
 * worker's address, which callers are not shown (the log has the whole error).
 */
function describeFetchError(error: unknown): string {
  const code = (error as { cause?: { code?: unknown } })?.cause?.code;
  return typeof code === 'string' && /^[A-Z0-9_]{1,64}$/.test(code) ? code : 'no connection';
}

