import { EgressNetworkError } from '../../egress/errors.js';
import { PinnedAgent, pinnedRequest, type PinnedResponse } from '../../egress/http.js';
import { allowListeners } from '../../util/abort-listeners.js';
import { redactSecrets } from '../../util/redact.js';
import { retryAfterMs } from '../../util/retry-after.js';
import type { OutgoingEvent } from '../events.js';
import { abortedOutcome, delivered, errorText, failed, outcomeOfError, runLimited } from './outcomes.js';
import { webhookHeaders, webhookId, webhookKey } from './signature.js';
import type { DeliveryOutcome, FeedSink, SinkOptions } from './types.js';
import { redactSinkUrl } from './url.js';

/** Requests of one deliver call in flight at once (and sockets kept open to the receiver). */
const CONCURRENCY = 8;
/** A receiver's answer is read up to this size; an acknowledgement needs no more. */
const MAX_RESPONSE_BYTES = 1024 * 1024;
/** The longest a receiver's `Retry-After` holds a delivery back (a longer one, or a date years away, waits this long). */
const MAX_RETRY_AFTER_MS = 24 * 3_600_000;
/** Characters of a failed answer's body kept in the outcome. */
const SNIPPET_CHARS = 200;
/** Kept-alive connections are dropped and the host resolved again this often, so a DNS change is followed. */
const AGENT_MAX_AGE_MS = 5 * 60_000;
/** Errors of a kept-alive socket the receiver closed as the request went out: sent again once, on another socket. */
const STALE_SOCKET = new Set(['ECONNRESET', 'EPIPE']);

/** Kept-alive connections to the receiver, its addresses checked by the egress policy once. */
interface Pool {
  agent: PinnedAgent;
  createdAt: number;
  /** Deliver calls using it; a retired pool is closed when the last one is done. */
  users: number;
  retired: boolean;
}

/**
 * A webhook: POSTs each event (batch 1, `application/cloudevents+json`, the
 * body the event's structured JSON) or each chunk of `batch` events (a JSON
 * array, `application/cloudevents-batch+json`), signed per Standard Webhooks
 * when a secret is given. Redirects are not followed. Every connection goes
 * through the egress policy (resolved, checked, pinned).
 */
export function createHttpSink(url: URL, options: SinkOptions): FeedSink {
  return new HttpSink(url, options);
}

class HttpSink implements FeedSink {
  readonly kind = 'http';
  readonly #url: URL;
  readonly #options: SinkOptions;
  /** The HMAC key, decoded at open so that a bad secret is refused before any delivery. */
  readonly #key: Buffer | undefined;
  #pool: Pool | undefined;
  #closed = false;

  constructor(url: URL, options: SinkOptions) {
    this.#url = url;
    this.#options = options;
    this.#key = options.secret === undefined ? undefined : webhookKey(options.secret);
  }

  async deliver(events: readonly OutgoingEvent[], signal: AbortSignal): Promise<DeliveryOutcome[]> {
    if (events.length === 0) return [];
    if (this.#closed) return events.map(() => failed('the sink is closed'));
    if (signal.aborted) return events.map(() => abortedOutcome(signal));
    // Each request in flight listens on the signal: that many listeners are expected, not a leak.
    allowListeners(signal, CONCURRENCY);
    let pool: Pool;
    try {
      pool = await this.#acquire(signal);
    } catch (error) {
      return events.map(() => outcomeOfError(error, signal, this.#options.secret));
    }
    const { batch } = this.#options;
    const chunks: OutgoingEvent[][] = [];
    for (let at = 0; at < events.length; at += batch) chunks.push(events.slice(at, at + batch));
    const outcomes: DeliveryOutcome[] = [];
    try {
      await runLimited(chunks, CONCURRENCY, async (chunk, index) => {
        const outcome = await this.#post(chunk, pool, signal);
        for (let i = 0; i < chunk.length; i++) outcomes[index * batch + i] = outcome;
      });
    } finally {
      this.#release(pool);
    }
    return outcomes;
  }

  async close(): Promise<void> {
    this.#closed = true;
    if (this.#pool) this.#retire(this.#pool);
  }

  async #post(events: readonly OutgoingEvent[], pool: Pool, signal: AbortSignal): Promise<DeliveryOutcome> {
    if (signal.aborted) return abortedOutcome(signal);
    const single = this.#options.batch === 1;
    const body = single ? events[0]!.body : `[${events.map((entry) => entry.body).join(',')}]`;
    const headers: Record<string, string> = {
      'content-type': single ? 'application/cloudevents+json' : 'application/cloudevents-batch+json',
      'user-agent': 'forgesync',
    };
    const id = webhookId(events.map((entry) => entry.id));
    for (let attempt = 1; ; attempt++) {
      try {
        // Signed per attempt: the timestamp says when this request was sent.
        const signed = this.#key ? { ...headers, ...webhookHeaders(this.#key, id, body) } : headers;
        const response = await pinnedRequest(this.#url, {
          policy: this.#options.policy,
          method: 'POST',
          headers: signed,
          body,
          signal,
          timeoutMs: this.#options.timeoutMs,
          maxBytes: MAX_RESPONSE_BYTES,
          agent: pool.agent,
        });
        return this.#outcomeOf(response);
      } catch (error) {
        if (signal.aborted) return abortedOutcome(signal);
        const code = error instanceof EgressNetworkError ? (error.cause as NodeJS.ErrnoException | undefined)?.code : undefined;
        if (attempt === 1 && code !== undefined && STALE_SOCKET.has(code)) continue;
        // The receiver may have moved: the next delivery resolves its host again.
        if (error instanceof EgressNetworkError) this.#retire(pool);
        return failed(errorText(error, this.#options.secret));
      }
    }
  }

  #outcomeOf(response: PinnedResponse): DeliveryOutcome {
    const { status } = response;
    if (status >= 200 && status < 300) return delivered;
    const snippet = this.#snippet(response.body);
    const detail = snippet ? `: ${snippet}` : '';
    if (status >= 300 && status < 400) {
      const location = headerText(response.headers.location);
      let where = '';
      try {
        if (location) where = ` to ${redactSinkUrl(new URL(location, this.#url).href).slice(0, 200)}`;
      } catch {
        where = ' to an invalid location';
      }
      return failed(`HTTP ${status}: the receiver redirects${where}; forgesync does not follow a sink's redirects, set the feed's URL to the address that takes the POST`);
    }
    if (status === 410) return failed(`HTTP 410: the receiver says this endpoint is gone for good${detail}`, { gone: true });
    if (status === 429 || status === 503) {
      const waitMs = retryAfterMs(headerText(response.headers['retry-after']), { now: Date.now(), maxMs: MAX_RETRY_AFTER_MS });
      return failed(`HTTP ${status}${detail}`, waitMs === undefined ? {} : { retryAfterMs: waitMs });
    }
    return failed(`HTTP ${status}${detail}`);
  }

  /** The start of a failed answer's body, one line, printable, without the secret should the receiver echo it. */
  #snippet(body: Buffer): string {
    const text = body.subarray(0, SNIPPET_CHARS * 4).toString('utf8').replace(/[\u0000-\u001f\u007f\s]+/g, ' ').trim();
    return redactSecrets(text, [this.#options.secret]).slice(0, SNIPPET_CHARS);
  }

  async #acquire(signal: AbortSignal): Promise<Pool> {
    if (this.#pool && Date.now() - this.#pool.createdAt > AGENT_MAX_AGE_MS) this.#retire(this.#pool);
    let pool = this.#pool;
    if (!pool) {
      const target = await this.#options.policy.resolve(this.#url.hostname, { signal, timeoutMs: this.#options.timeoutMs });
      if (this.#closed) throw new Error('the sink is closed');
      // Another delivery may have resolved meanwhile: one pool at a time.
      pool = this.#pool ??= { agent: new PinnedAgent(this.#url.protocol as 'http:' | 'https:', target, CONCURRENCY), createdAt: Date.now(), users: 0, retired: false };
    }
    pool.users++;
    return pool;
  }

  #release(pool: Pool): void {
    pool.users--;
    if (pool.retired && pool.users === 0) pool.agent.close();
  }

  /** Stops handing out `pool`; its connections close once no delivery uses them. */
  #retire(pool: Pool): void {
    pool.retired = true;
    if (this.#pool === pool) this.#pool = undefined;
    if (pool.users === 0) pool.agent.close();
  }
}

function headerText(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}

