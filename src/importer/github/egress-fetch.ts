import type { BoundToken } from '../../credentials/store.js';
import type { BodyMeter } from '../../egress/body.js';
import { type PinnedAgent, requestFollowingRedirects } from '../../egress/http.js';
import type { EgressPolicy } from '../../egress/policy.js';
import { plainNumbers, RAW_BODIES } from './answers.js';

const REQUEST_TIMEOUT_MS = 60_000;

export interface EgressFetchOptions {
  policy: EgressPolicy;
  /** The longest answer read; a longer one fails with EgressResponseTooLargeError. */
  maxBytes: number;
  /** The kept-alive connections for `url`, when it is the API host's. */
  agentFor: (url: URL) => Promise<PinnedAgent> | undefined;
  /** Sent only to hosts its credential is bound to; none: anonymous. */
  token?: BoundToken | undefined;
  /** Counts an answer's body as it arrives (and may hold reading back). */
  meter?: BodyMeter | undefined;
}

/**
 * The fetch @octokit/request sends through: forgesync's egress policy,
 * redirects followed hop by hop, the token added only for hosts its
 * credential is bound to (so it never follows a redirect elsewhere). An
 * answer is read up to the answer cap, counted against `meter` as it
 * arrives; the body of an answer that is not a success is not kept (it is
 * read once, for its message), so it stops counting at once.
 */
export function egressFetch({ policy, maxBytes, agentFor, token, meter }: EgressFetchOptions) {
  return async (input: string | URL | Request, init: RequestInit = {}): Promise<Response> => {
    const url = new URL(typeof input === 'string' || input instanceof URL ? input : input.url);
    const base = Object.fromEntries(new Headers(init.headers).entries());
    delete base.authorization;
    const agent = await agentFor(url);
    const response = await requestFollowingRedirects(url, {
      policy,
      ...(agent ? { agent } : {}),
      timeoutMs: REQUEST_TIMEOUT_MS,
      maxBytes,
      ...(meter ? { meter } : {}),
      ...(init.signal ? { signal: init.signal } : {}),
      headers: (hop) => (token?.allows(hop) ? { ...base, authorization: `token ${token.token}` } : base),
    });
    if (response.status < 200 || response.status >= 300) meter?.drop(response.body.length);
    const headers = new Headers();
    for (const [name, value] of Object.entries(response.headers)) {
      if (value === undefined) continue;
      for (const one of Array.isArray(value) ? value : [value]) headers.append(name, one);
    }
    const empty = response.status === 204 || response.status === 304 || response.status === 205;
    const success = response.status >= 200 && response.status < 300;
    const answer = new Response(empty ? null : success ? response.body : plainNumbers(response.body), { status: response.status, headers });
    // The bytes are here already: bodyParser takes them from this map rather than reading the stream again.
    if (answer.body) RAW_BODIES.set(answer.body, response.body);
    Object.defineProperty(answer, 'url', { value: response.url.toString() });
    return answer;
  };
}
