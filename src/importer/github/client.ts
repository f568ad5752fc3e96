import { request as octokitRequest } from '@octokit/request';
import { setTimeout as sleep } from 'node:timers/promises';
import type { BoundToken } from '../../credentials/store.js';
import type { BodyMeter } from '../../egress/body.js';
import { EgressRefusedError, EgressResponseTooLargeError } from '../../egress/errors.js';
import { PinnedAgent } from '../../egress/http.js';
import { allowListeners } from '../../util/abort-listeners.js';
import { retryAfterMs } from '../../util/retry-after.js';
import { GithubAnswerTooLargeError, GithubAuthError, GithubRequestError } from '../errors.js';
import { parseLinks } from './link.js';
import type { Permit, SecondaryVerdict } from './adaptive-limit.js';
import { Semaphore, type TokenBudget } from './pacer.js';
import { MAX_LIMIT_WAIT_MS, resetAtOf, serverDateOf } from './rate-headers.js';
import { waitForReset } from './reset-wait.js';
import { bodyParser, connectionReset, httpErrorOf, limitOf, messageOf } from './answers.js';
import { egressFetch } from './egress-fetch.js';
import { zeroCounts, type RequestCounts } from './request-counts.js';
import type { ClientToken, GetOptions, GithubClientOptions, GithubResponse } from './client-types.js';
import { traceClientRequest } from '../../tracing/http-client.js';

/** The most one answer of the API may be: a page of 100 pull requests is about 2 MB; a longer one is refused, not retried. */
export const MAX_ANSWER_BYTES = 8 * 2 ** 20;
/** A secondary limit without retry-after: GitHub asks to wait at least a minute. */
const SECONDARY_DEFAULT_WAIT_MS = 60_000;
/** A primary limit's refusal without a usable reset time: try again in a minute. */
const PRIMARY_DEFAULT_WAIT_MS = 60_000;
/** A limit's refusal whose reset has passed or whose retry-after is 0 (clocks differ, or the host says so) still waits this long: no tight loop of refusals. */
const LIMIT_MIN_WAIT_MS = 1000;
const MAX_BACKOFF_MS = 60_000;

/**
 * A paced GitHub REST client for one import run, on @octokit/request with
 * forgesync's egress policy underneath (every connection checked and
 * pinned, redirects followed hop by hop). The token goes only to hosts its
 * credential is bound to. Rate limits, secondary limits, 5xx answers and
 * connection resets are handled here; callers see only answers to act on.
 */
export class GithubClient {
  readonly counts: RequestCounts = zeroCounts();
  readonly #semaphore: Semaphore;
  readonly #slots: Slot[];
  /** Kept-alive connections to the API host, its addresses checked once (no handshake per request). */
  #agent: Promise<PinnedAgent> | undefined;
  readonly #api: URL;
  /** false once the host answered `/rate_limit` 404 (rate limiting off on a GHE server): waits for a reset go by the clock. */
  #budgetEndpoint = true;

  /** Requests it has in flight at most. */
  get concurrency(): number {
    return this.#semaphore.limit;
  }

  constructor(private readonly options: GithubClientOptions) {
    this.#semaphore = new Semaphore(options.concurrency);
    // Every request in flight listens on the run's signal (and waits for a slot on it): that many listeners are expected, not a leak.
    if (options.signal) allowListeners(options.signal, 2 * options.concurrency);
    this.#api = new URL(options.apiUrl);
    const tokens: (ClientToken | null)[] = options.tokens.length > 0 ? [...options.tokens] : [null];
    this.#slots = tokens.map((token) => ({
      token,
      budget: options.budgets.of(options.apiUrl, token?.credential ?? null),
      request: octokitRequest.defaults({
        baseUrl: options.apiUrl,
        headers: { 'user-agent': 'forgesync', 'x-github-api-version': '2022-11-28' },
        request: { fetch: this.#fetchWith(token?.token) },
      }),
    }));
    for (const slot of this.#slots) slot.budget.flight.allowUpTo(options.concurrency);
  }

  /** Closes the kept-alive connections. */
  close(): void {
    void this.#agent?.then((agent) => agent.close(), () => undefined);
    this.#agent = undefined;
  }

  #agentFor(url: URL): Promise<PinnedAgent> | undefined {
    const api = this.#api;
    if (url.host !== api.host || url.protocol !== api.protocol) return undefined;
    this.#agent ??= this.options.policy.resolve(api.hostname).then((target) => new PinnedAgent(api.protocol as 'http:' | 'https:', target, this.options.concurrency));
    // A failed lookup is not kept: the next request tries again.
    this.#agent.catch(() => (this.#agent = undefined));
    return this.#agent;
  }

  /** The budgets of this client's tokens, as last seen. */
  budgets(): TokenBudget[] {
    return this.#slots.map((slot) => slot.budget);
  }

  /** Asks `/rate_limit` for each token's budget (not counted by GitHub); servers without it (404) are fine. */
  async learnBudgets(): Promise<void> {
    await Promise.all(this.#slots.map((slot) => this.#askBudget(slot)));
  }

  /** Asks `/rate_limit` for one token's budget; 404 (rate limiting disabled on a GHE server) or any failure but 401: budgets are learned from answers. */
  async #askBudget(slot: Slot): Promise<void> {
    const sentAt = Date.now();
    try {
      const response = await slot.request('GET /rate_limit', { request: { signal: this.options.signal } });
      this.counts.total++;
      const now = Date.now();
      slot.budget.observe(response.headers as Record<string, string>, now, sentAt);
      const core = (response.data as { resources?: { core?: { limit: number; remaining: number; reset: number } } }).resources?.core;
      if (core) slot.budget.observe({ 'x-ratelimit-limit': String(core.limit), 'x-ratelimit-remaining': String(core.remaining), 'x-ratelimit-reset': String(core.reset) }, now, sentAt);
    } catch (error) {
      this.counts.total++;
      const status = httpErrorOf(error)?.status;
      if (status === 401) throw new GithubAuthError(slot.token?.credential ?? null, this.options.apiUrl);
      if (status === 404) this.#budgetEndpoint = false;
    }
  }

  /** Waits up to `delay` ms for `slot`: a spent budget until its window is back (asking `/rate_limit` near the reset, see waitForReset), else a spacing or a pause. */
  #waitFor(slot: Slot, delay: number, now: number): Promise<void> {
    const { signal } = this.options;
    if (slot.budget.available(now) > 0) return sleep(Math.min(delay, 2 ** 31 - 1), undefined, signal ? { signal } : {});
    return waitForReset(slot.budget, delay, this.#budgetEndpoint ? () => this.#askBudget(slot) : undefined, signal);
  }

  /**
   * GETs `path` (relative to the API URL, or an absolute URL from a Link
   * header) with `query`; with `etag`, conditionally (a 304 costs no budget).
   * @throws GithubAuthError on 401; GithubRequestError when retries ran out.
   */
  async get<T = unknown>(path: string, options: GetOptions = {}): Promise<GithubResponse<T>> {
    const { retries, retryBaseMs, signal } = this.options;
    for (let failures = 0, sent = 0, resets = 0, refusals = 0; ; sent++) {
      if (sent > 0) this.counts.retried++;
      const release = await this.#semaphore.acquire(signal);
      let slot: Slot;
      let permit: Permit;
      try {
        ({ slot, permit } = await this.#pickSlot());
      } catch (error) {
        release();
        throw error;
      }
      let outcome: Outcome<T> | undefined;
      let verdict: SecondaryVerdict | undefined;
      // Out of flight as soon as its answer's budget is read (not also after the body): counted once, not twice. A
      // success gives its place under the adaptive limit back then too, as the host is done with it (the body is ours
      // to read): the limit counts what the host is still working on, as the host does.
      let inFlight = true;
      const answered = (status?: number): void => {
        if (inFlight) slot.budget.done();
        inFlight = false;
        if (status !== undefined && status < 400) permit.success();
      };
      try {
        outcome = await traceClientRequest({ method: 'GET', path, host: this.#api.host }, () => this.#send<T>(slot, path, options, answered), (sent) => sent.response?.status ?? sent.status);
      } finally {
        answered();
        if (outcome?.secondary) verdict = permit.secondaryLimited();
        else if (outcome?.response) permit.success();
        else permit.release();
        release();
      }
      if (outcome.response) return outcome.response;
      if (outcome.secondary) {
        await this.#waitOutSecondary(slot, { retryAfterMs: outcome.waitMs, verdict, refusedBefore: refusals++ });
        continue;
      }
      if (outcome.waitMs !== undefined) {
        // A limit's refusal is not a failure (it uses up no retry); the slot's spent budget or pause makes the next pick wait.
        continue;
      }
      // A kept-alive connection the host closed as it was reused (its idle timeout ran out, e.g. over a wait for a reset):
      // the request never reached it; sent again at once, not after a backoff (once per request: a host resetting every one is a failure).
      if (outcome.reset && resets++ === 0) continue;
      if (failures >= retries) throw new GithubRequestError(path, outcome.status ?? null, `${outcome.detail}; gave up after ${failures + 1} attempts`);
      const backoff = Math.min(MAX_BACKOFF_MS, retryBaseMs * 2 ** failures++) * (0.5 + Math.random() / 2);
      await sleep(backoff, undefined, signal ? { signal } : {});
    }
  }

  /**
   * Runs `send`, a request to `url` made outside this client (a release
   * asset's download from the API's asset endpoint), under the pacing of
   * the token that goes with it (the first whose binding allows the URL, as
   * the download picks it): it waits for that token's pause and for a place
   * under its adaptive in-flight limit, so downloads and API requests
   * together stay under the host's secondary limit. `succeeded` tells
   * whether the result is an answer that counts towards growing the limit.
   * A URL off the API host is sent unpaced. Returns what `send` returns.
   */
  async paced<T>(url: URL, send: () => Promise<T>, succeeded: (result: T) => boolean): Promise<T> {
    const slot = url.origin === this.#api.origin ? this.#slots.find((candidate) => candidate.token?.token.allows(url) ?? true) : undefined;
    if (!slot) return send();
    const { signal } = this.options;
    let permit: Permit;
    for (;;) {
      const now = Date.now();
      const delay = slot.budget.delay(now);
      if (delay > 0) await this.#waitFor(slot, delay, now);
      permit = await slot.budget.flight.acquire(signal);
      if (slot.budget.delay(Date.now()) <= 0) break;
      permit.release();
    }
    // The download's answer is not read for its budget headers: it counts as in flight, then as one spent.
    slot.budget.take(Date.now());
    let result: { value: T } | undefined;
    try {
      result = { value: await send() };
      return result.value;
    } finally {
      slot.budget.done();
      slot.budget.spent();
      if (result && succeeded(result.value)) permit.success();
      else permit.release();
    }
  }

  /**
   * Waits out a secondary-limit refusal as GitHub asks: the refused request
   * waits its retry-after, twice as long for each time it was refused
   * before. The token's other requests go on under the halved in-flight
   * limit, as Octokit's throttling does (too many at once is the usual
   * cause, and the cut fixes it) — unless the refusal shows that concurrency
   * is not the cause: a request refused with nothing else in flight, or
   * refused again after its wait. Then every request of the token waits.
   */
  async #waitOutSecondary(slot: Slot, refusal: { retryAfterMs: number; verdict: SecondaryVerdict | undefined; refusedBefore: number }): Promise<void> {
    const now = Date.now();
    const waitMs = Math.min(MAX_LIMIT_WAIT_MS, refusal.retryAfterMs * 2 ** refusal.refusedBefore);
    this.#countWait(waitMs);
    if (refusal.verdict === 'not-concurrency' || refusal.refusedBefore > 0) {
      // The next pick waits for the token's pause, this request's included.
      slot.budget.pauseUntil(now + waitMs, now);
      return;
    }
    const { signal } = this.options;
    await sleep(waitMs, undefined, signal ? { signal } : {});
  }

  #countWait(ms: number): void {
    this.counts.rateLimitWaits++;
    this.counts.rateLimitWaitMs += ms;
    this.options.onRateLimitWait?.(ms);
  }

  /**
   * The token to send with: the one that may send soonest (most budget on
   * ties); waits for it, then for a place under its adaptive in-flight limit.
   * A place granted while a retry-after began meanwhile is given back and the
   * pick starts over, so nobody goes during a secondary limit's pause. The
   * budget is taken in the same step as its last look (no await between):
   * requests woken together cannot all see the same last unit free.
   */
  async #pickSlot(): Promise<{ slot: Slot; permit: Permit }> {
    for (;;) {
      const slot = await this.#soonestSlot();
      const permit = await slot.budget.flight.acquire(this.options.signal);
      const now = Date.now();
      if (slot.budget.delay(now) <= 0) {
        slot.budget.take(now);
        return { slot, permit };
      }
      permit.release();
    }
  }

  /** The token that may send soonest (most budget on ties), once it may. */
  async #soonestSlot(): Promise<Slot> {
    for (let waited = false; ; ) {
      const now = Date.now();
      let best = this.#slots[0]!;
      let bestDelay = best.budget.delay(now);
      for (const slot of this.#slots.slice(1)) {
        const delay = slot.budget.delay(now);
        if (delay < bestDelay || (delay === bestDelay && slot.budget.available(now) > best.budget.available(now))) {
          best = slot;
          bestDelay = delay;
        }
      }
      if (bestDelay <= 0) return best;
      // Waiting out a spent budget (not just spacing requests) is a rate-limit wait: one, however many looks it takes.
      if (!waited && best.budget.available(now) <= 0) {
        this.#countWait(bestDelay);
        waited = true;
      }
      await this.#waitFor(best, bestDelay, now);
    }
  }

  /** Sends one request; `answered` is called with the status once its answer's budget headers are read. */
  async #send<T>(slot: Slot, path: string, options: GetOptions, answered: (status: number) => void): Promise<Outcome<T>> {
    // When the request went: an answer slow to come back may tell of a window already over (TokenBudget.observe).
    const sentAt = Date.now();
    const headers: Record<string, string> = {};
    if (options.etag) headers['if-none-match'] = options.etag;
    const route = /^https?:\/\//i.test(path) ? `GET ${path}` : `GET ${path.startsWith('/') ? path : `/${path}`}`;
    try {
      // Octokit's own parser keeps big integers exact at many times JSON.parse's cost; GitHub's ids fit a double.
      // A metered answer goes through a fetch of its own, which counts its body against the meter.
      const fetch = options.meter ? { fetch: this.#fetchWith(slot.token?.token, options.meter) } : {};
      const response = await slot.request(route, { ...options.query, headers, request: { signal: this.options.signal, parseSuccessResponseBody: false, ...fetch } });
      this.counts.total++;
      this.counts.counted++;
      const responseHeaders = response.headers as Record<string, string | undefined>;
      slot.budget.observe(responseHeaders, Date.now(), sentAt);
      answered(response.status);
      this.options.onAnswer?.('ok');
      const { parse, bytes } = await bodyParser<T>(response.data, responseHeaders, path);
      const answer = this.#answer<T>(response.status, undefined as T, responseHeaders, bytes);
      // Parsed when first read: a page waiting its turn to be stored keeps its bytes, not the several times larger objects.
      let parsed: { value: T } | undefined;
      Object.defineProperty(answer, 'data', { enumerable: true, get: () => (parsed ??= { value: parse() }).value });
      return { response: answer };
    } catch (thrown) {
      if (this.options.signal?.aborted) throw this.options.signal.reason;
      const error = httpErrorOf(thrown);
      if (!error) throw thrown;
      const status = error.status;
      const responseHeaders = (error.response?.headers ?? {}) as Record<string, string | undefined>;
      if (!error.response) {
        this.options.onAnswer?.('network_error');
        // Neither would go otherwise on a second try: the answer would be as long, the redirect as refused.
        const cause = (thrown as { cause?: unknown }).cause;
        if (cause instanceof EgressResponseTooLargeError) throw new GithubAnswerTooLargeError(path, cause.maxBytes);
        if (cause instanceof EgressRefusedError) throw new GithubRequestError(path, null, cause.message, { cause });
        return { status: null, detail: error.message, ...(connectionReset(cause) ? { reset: true as const } : {}) };
      }
      this.counts.total++;
      slot.budget.observe(responseHeaders, Date.now(), sentAt);
      answered(status);
      if (status === 304) {
        this.counts.notModified++;
        this.options.onAnswer?.('not_modified');
        return { response: this.#answer<T>(304, undefined as T, responseHeaders) };
      }
      const message = messageOf(error.response.data);
      const limited = limitOf(status, responseHeaders, message);
      if (limited === 'primary') {
        this.options.onAnswer?.('rate_limited');
        const now = Date.now();
        const statedResetAt = resetAtOf(responseHeaders['x-ratelimit-reset'], now);
        const resetAt = Math.max(statedResetAt ?? now + PRIMARY_DEFAULT_WAIT_MS, now + LIMIT_MIN_WAIT_MS);
        slot.budget.exhausted(resetAt, now, { ...(statedResetAt !== undefined ? { statedResetAt } : {}), sentAt });
        return { status, detail: 'rate limit exhausted', waitMs: Math.max(0, resetAt - now) };
      }
      if (limited === 'secondary') {
        this.options.onAnswer?.('secondary_limited');
        const now = Date.now();
        const waitMs = Math.max(retryAfterMs(responseHeaders['retry-after'], { now, maxMs: MAX_LIMIT_WAIT_MS }) ?? SECONDARY_DEFAULT_WAIT_MS, LIMIT_MIN_WAIT_MS);
        this.counts.secondaryLimited++;
        return { status, detail: 'secondary rate limit', waitMs, secondary: true };
      }
      if (status >= 500 || status === 408) {
        this.options.onAnswer?.('server_error');
        return { status, detail: message ?? `HTTP ${status}` };
      }
      if (responseHeaders['x-ratelimit-limit'] !== undefined) this.counts.counted++;
      if (status === 401) throw new GithubAuthError(slot.token?.credential ?? null, this.options.apiUrl);
      this.options.onAnswer?.('client_error');
      return { response: this.#answer<T>(status, error.response.data as T, responseHeaders) };
    }
  }

  /** The fetch @octokit/request sends `token`'s requests through (see egressFetch), counting answers against `meter`. */
  #fetchWith(token: BoundToken | undefined, meter?: BodyMeter) {
    return egressFetch({ policy: this.options.policy, maxBytes: this.options.maxAnswerBytes ?? MAX_ANSWER_BYTES, agentFor: (url) => this.#agentFor(url), token, meter });
  }

  #answer<T>(status: number, data: T, headers: Record<string, string | undefined>, bytes = 0): GithubResponse<T> {
    return { status, data, headers, etag: headers.etag, links: parseLinks(headers.link), date: serverDateOf(headers.date, Date.now()), bytes };
  }
}

/** One token's sender. */
interface Slot {
  token: ClientToken | null;
  budget: TokenBudget;
  request: typeof octokitRequest;
}

type Outcome<T> =
  | { response: GithubResponse<T>; status?: undefined; detail?: undefined; waitMs?: undefined; secondary?: undefined }
  | { response?: undefined; status: number | null; detail: string; waitMs?: number; secondary?: undefined; reset?: true }
  | { response?: undefined; status: number; detail: string; waitMs: number; secondary: true; reset?: undefined };
