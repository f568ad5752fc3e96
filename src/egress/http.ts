import { Agent as HttpAgent, request as httpRequest, type IncomingHttpHeaders } from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';
import { InvalidInputError } from '../errors.js';
import type { ResolvedHost } from './address.js';
import { bufferBody, BodyTooLarge, streamBody, type BodyMeter, type BodySink } from './body.js';
import { EgressNetworkError, EgressResponseTooLargeError, EgressTimeoutError } from './errors.js';
import type { EgressPolicy } from './policy.js';
import { pinnedLookup } from './resolve.js';

/** Default cap of a response body: 64 MiB. */
const DEFAULT_MAX_BYTES = 64 * 1024 * 1024;
/** setTimeout's ceiling (~24.8 days); longer delays would fire at once. */
const MAX_TIMER_MS = 2 ** 31 - 1;
const REDIRECTS = new Set([301, 302, 303, 307, 308]);
const EMPTY = Buffer.alloc(0);

export interface PinnedRequestOptions {
  policy: EgressPolicy;
  method?: string;
  headers?: Record<string, string>;
  /** The request body, sent whole (Node sets its content-length); none by default. */
  body?: string | Buffer;
  signal?: AbortSignal;
  /** Time limit of the whole exchange, the lookup included (default: none). */
  timeoutMs?: number;
  /** Largest body read (or streamed); a longer one fails the request with EgressResponseTooLargeError (default 64 MiB). */
  maxBytes?: number;
  /** Told of a body read into memory as it arrives, and may hold reading back (see BodyMeter). */
  meter?: BodyMeter;
  /** Streams the body of the answers it gives a stream for to that stream instead of memory (see BodySink); the request ends when the stream has finished. */
  sink?: BodySink;
  /** `url`'s host, already resolved and checked (e.g. a redirect to the same host): no second lookup. */
  target?: ResolvedHost;
  /** Keeps connections open between requests: a {@link PinnedAgent} of `url`'s host (ignored for any other host). */
  agent?: PinnedAgent;
}

/**
 * Connections kept alive to one host, every one of them opened through the
 * pinned lookup of its checked addresses: reusing them is as safe as a new
 * pinned connection (no socket opened without the check can be in the
 * pool). For a client that talks to one host many times (an import's API
 * host): no TCP and TLS handshake per request.
 */
export class PinnedAgent {
  readonly agent: HttpAgent;

  constructor(
    readonly protocol: 'http:' | 'https:',
    readonly target: ResolvedHost,
    maxSockets = 16,
  ) {
    const options = { keepAlive: true, maxSockets, lookup: pinnedLookup(target) };
    this.agent = protocol === 'https:' ? new HttpsAgent(options) : new HttpAgent(options);
  }

  /** Whether requests to `url` may use this agent: same scheme and host. */
  serves(url: URL): boolean {
    return url.protocol === this.protocol && url.hostname.replace(/^\[|\]$/g, '').toLowerCase() === this.target.host;
  }

  close(): void {
    this.agent.destroy();
  }
}

export interface PinnedResponse {
  /** The URL this response answers. */
  url: URL;
  status: number;
  headers: IncomingHttpHeaders;
  /** The body read into memory (empty when it was streamed to a sink). */
  body: Buffer;
  /** The body's length in bytes, read or streamed. */
  size: number;
  /** Where the request went: the host and the checked addresses it was pinned to. */
  target: ResolvedHost;
}

/**
 * One HTTP(S) request through the egress policy: the host is resolved once and
 * every address checked before anything is sent, and the connection is pinned
 * to those addresses (the request's `lookup`), so a DNS answer that changes
 * between the check and the connect cannot move it. Redirects are not
 * followed (see requestFollowingRedirects). No agent is shared: a pooled
 * socket opened by a request that was not pinned could otherwise be reused.
 * No proxy is used (see proxy.ts).
 * The body is read into memory, or streamed to `sink`, at most `maxBytes`
 * of it, counted as it arrives.
 * @throws EgressRefusedError, EgressLookupError before anything is sent;
 *   EgressResponseTooLargeError; EgressNetworkError; EgressTimeoutError;
 *   `signal.reason` on abort; a sink's own error as it is.
 */
export async function pinnedRequest(url: URL, options: PinnedRequestOptions): Promise<PinnedResponse> {
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new InvalidInputError(`only http(s) URLs can be requested, not ${url.protocol}`);
  const started = Date.now();
  const { signal, timeoutMs } = options;
  const pooled = options.agent?.serves(url) ? options.agent : undefined;
  const target = pooled?.target ?? options.target ?? (await options.policy.resolve(url.hostname, { signal, ...(timeoutMs !== undefined ? { timeoutMs } : {}) }));
  const left = timeoutMs === undefined ? undefined : Math.max(0, timeoutMs - (Date.now() - started));
  return await send(url, target, { ...options, agent: pooled }, left);
}

function send(url: URL, target: ResolvedHost, options: PinnedRequestOptions, timeoutMs: number | undefined): Promise<PinnedResponse> {
  const { signal } = options;
  const maxBytes = options.maxBytes ?? DEFAULT_MAX_BYTES;
  return new Promise((resolve, reject) => {
    let settled = false;
    const settle = (finish: () => void): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
      finish();
    };
    const fail = (detail: string, cause?: unknown): void =>
      settle(() => reject(new EgressNetworkError(url, target, detail, cause === undefined ? undefined : { cause })));
    const send = url.protocol === 'https:' ? httpsRequest : httpRequest;
    const method = options.method ?? 'GET';
    const req = send(url, { method, headers: options.headers ?? {}, agent: options.agent?.agent ?? false, lookup: pinnedLookup(target) }, (res) => {
      const status = res.statusCode ?? 0;
      const tooLarge = (): void => {
        req.destroy();
        settle(() => reject(new EgressResponseTooLargeError(url, target, maxBytes)));
      };
      // A claim past the limit is refused before a byte of the body is read; a smaller claim is not trusted either (bytes are counted).
      const bodiless = method === 'HEAD' || status === 204 || status === 304 || status < 200;
      const declared = Number(res.headers['content-length']);
      if (!bodiless && Number.isFinite(declared) && declared > maxBytes) return tooLarge();
      const sink = options.sink?.({ status, headers: res.headers });
      const body = sink ? streamBody(res, sink, maxBytes).then((size) => ({ body: EMPTY, size })) : bufferBody(res, maxBytes, options.meter).then((read) => ({ body: read, size: read.length }));
      body.then(
        (read) => settle(() => resolve({ url, status, headers: res.headers, ...read, target })),
        (error: unknown) => {
          if (error instanceof BodyTooLarge) return tooLarge();
          sink?.destroy();
          // The sink's own failure (a full disk) is not the network's: passed on as it is.
          if (sink && sink.errored === error) return settle(() => reject(error));
          fail((error as Error).message, error);
        },
      );
    });
    const stop = (error: unknown): void => {
      req.destroy();
      settle(() => reject(error));
    };
    const onAbort = (): void => stop(signal?.reason);
    const timer = timeoutMs === undefined ? undefined : setTimeout(() => stop(new EgressTimeoutError(url, timeoutMs)), Math.min(timeoutMs, MAX_TIMER_MS));
    signal?.addEventListener('abort', onAbort, { once: true });
    if (signal?.aborted) onAbort();
    req.on('error', (error: NodeJS.ErrnoException) => fail(error.code ?? error.message, error));
    req.end(options.body);
  });
}

export interface RedirectingRequestOptions extends Omit<PinnedRequestOptions, 'headers' | 'target' | 'method' | 'body'> {
  // `agent` (inherited) is used for the hops to its own host only; `sink` is asked on every hop, `meter` counts every hop's body (a followed redirect's is dropped).
  method?: 'GET' | 'HEAD';
  /** The headers of the request to `url` (asked per hop: a credential must be given per origin). */
  headers?: (url: URL) => Record<string, string>;
  /**
   * Decides on each redirect before anything is sent to `next`: true follows
   * it (its host then passes the policy like the first), false ends here with
   * the redirect response as the answer; throw to refuse. Default: follow to
   * http(s) URLs.
   */
  follow?: (next: URL, response: PinnedResponse) => boolean;
  /** Redirects followed at most before the last redirect response is the answer (default 20). */
  maxRedirects?: number;
  /** Called with the host of `url` resolved and checked, before the first request (to keep it). */
  target?: ResolvedHost;
}

/**
 * A GET (or HEAD) following redirects itself, hop by hop: each target passes
 * the egress policy (resolved once, checked, pinned) before a byte is sent to
 * it, the caller decides on every hop (`follow`) and gives the headers for
 * every origin (`headers`), so a credential never follows a redirect it was
 * not meant for. The time limit covers the whole chain.
 */
export async function requestFollowingRedirects(url: URL, options: RedirectingRequestOptions): Promise<PinnedResponse> {
  const { policy, signal, maxBytes, meter, sink } = options;
  const deadline = options.timeoutMs === undefined ? undefined : Date.now() + options.timeoutMs;
  const follow = options.follow ?? ((next: URL) => next.protocol === 'http:' || next.protocol === 'https:');
  const maxRedirects = options.maxRedirects ?? 20;
  let current = url;
  let target = options.target;
  for (let hop = 0; ; hop++) {
    const timeoutMs = deadline === undefined ? undefined : Math.max(0, deadline - Date.now());
    const response = await pinnedRequest(current, {
      policy,
      method: options.method ?? 'GET',
      headers: options.headers?.(current) ?? {},
      ...(signal ? { signal } : {}),
      ...(timeoutMs !== undefined ? { timeoutMs } : {}),
      ...(maxBytes !== undefined ? { maxBytes } : {}),
      ...(meter ? { meter } : {}),
      ...(sink ? { sink } : {}),
      ...(options.agent ? { agent: options.agent } : {}),
      ...(target && target.host === current.hostname.replace(/^\[|\]$/g, '').toLowerCase() ? { target } : {}),
    });
    const location = response.headers.location;
    if (!REDIRECTS.has(response.status) || !location || hop >= maxRedirects) return response;
    let next: URL;
    try {
      next = new URL(location, current);
    } catch {
      return response;
    }
    if (!follow(next, response)) return response;
    meter?.drop(response.body.length);
    target = response.target;
    current = next;
  }
}
