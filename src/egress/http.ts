import { Agent as HttpAgent, request as httpRequest, type IncomingHttpHeaders } from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';
import { InvalidInputError } from '../errors.js';
import type { ResolvedHost } from './address.js';
import { EgressNetworkError, EgressTimeoutError } from './errors.js';
import type { EgressPolicy } from './policy.js';
import { pinnedLookup } from './resolve.js';

/** Default cap of a response body: 64 MiB. */
const DEFAULT_MAX_BYTES = 64 * 1024 * 1024;
/** setTimeout's ceiling (~24.8 days); longer delays would fire at once. */
const MAX_TIMER_MS = 2 ** 31 - 1;
const REDIRECTS = new Set([301, 302, 303, 307, 308]);

export interface PinnedRequestOptions {
  policy: EgressPolicy;
  method?: string;
  headers?: Record<string, string>;
  /** The request body, sent whole (Node sets its content-length); none by default. */
  body?: string | Buffer;
  signal?: AbortSignal;
  /** Time limit of the whole exchange, the lookup included (default: none). */
  timeoutMs?: number;
  /** Largest body read; a longer one fails the request (default 64 MiB). */
  maxBytes?: number;
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
  body: Buffer;
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
 * @throws EgressRefusedError, EgressLookupError before anything is sent;
 *   EgressNetworkError; EgressTimeoutError; `signal.reason` on abort.
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
    const req = send(url, { method: options.method ?? 'GET', headers: options.headers ?? {}, agent: options.agent?.agent ?? false, lookup: pinnedLookup(target) }, (res) => {
      const chunks: Buffer[] = [];
      let size = 0;
      res.on('data', (chunk: Buffer) => {
        size += chunk.length;
        if (size <= maxBytes) chunks.push(chunk);
        else {
          req.destroy();
          fail(`the response is larger than ${maxBytes} bytes`);
        }
      });
      res.on('end', () => settle(() => resolve({ url, status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks), target })));
      res.on('error', (error) => fail(error.message, error));
      res.on('close', () => fail('the connection closed before the response ended'));
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
  // `agent` (inherited) is used for the hops to its own host only.
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
  const { policy, signal, maxBytes } = options;
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
    target = response.target;
    current = next;
  }
}
