import type { IncomingHttpHeaders } from 'node:http';
import { AdaptiveLimit } from './adaptive-limit.js';
import { MAX_LIMIT_WAIT_MS, rateHeadersOf } from './rate-headers.js';
import { RESET_POLL_LEAD_MS } from './reset-wait.js';
import { WaitQueue } from '../../util/wait-queue.js';

/** One token's rate budget as GitHub last reported it (`x-ratelimit-*`), for status and the dashboard. */
export interface RateBudget {
  /** The credential's name; null for anonymous requests. */
  credential: string | null;
  limit: number | null;
  remaining: number | null;
  /** When the window resets (ISO 8601), or null when unknown. */
  resetAt: string | null;
}

/** Below this share of its limit a token's remaining budget is spread evenly until the reset. */
const RESERVE_SHARE = 0.1;
/** Added to a reset time before the budget counts as restored: clocks differ a little (an early request gets a 403 and waits again). */
const RESET_SLACK_MS = 300;

/**
 * The budget of one token on one API host, shared by every import of this
 * process that uses it. GitHub reports the remaining requests and the reset
 * time on every answer; requests in flight are subtracted until theirs come
 * back, so parallel requests do not all spend the same last unit.
 *
 * Pacing: while more than a tenth of the limit is left, requests go at full
 * speed (an import that fits in the budget is not slowed down); below that,
 * the rest is spread evenly over the time to when the window may be back
 * (the stated reset, rounded up to the second, less RESET_POLL_LEAD_MS), so
 * the token never runs into a 403 and other users of it keep a trickle, and
 * the whole window is used; at zero, requests wait for the reset (or go to
 * another token with budget), seen as soon as it comes (reset-wait.ts).
 *
 * Answers come back out of order: one whose request went before the answer
 * that told of a later window, and that states an earlier reset, is news of
 * a window already over (it neither restores nor spends the current one).
 */
export class TokenBudget {
  limit: number | undefined;
  remaining: number | undefined;
  /** Epoch ms of the reset, as GitHub gave it (seconds) in milliseconds. */
  resetAt: number | undefined;
  inFlight = 0;
  /** Earliest time the next request may go (a secondary limit's retry-after). */
  nextAt = 0;
  /** Earliest time the next request may go while the last tenth of the budget is spread (take). */
  #spacedUntil = 0;
  /** When the request went whose answer told of the current window (its reset): older answers stating an earlier reset are old news. */
  #windowSentAt = Number.NEGATIVE_INFINITY;
  /** An ask for this budget under way while waiting for the reset (one per token, whoever waits). */
  #poll: Promise<void> | undefined;
  /** Earliest time the next ask for this budget may begin. */
  nextPollAt = 0;
  /** Requests this token may have in flight on this host, learned from secondary-limit answers (clients raise its ceiling to their concurrency). */
  readonly flight = new AdaptiveLimit(1);

  constructor(readonly credential: string | null) {}

  /**
   * Learns the budget from an answer's headers (any answer with them: 200, 304, 403), bounded (see rate-headers.ts).
   * `sentAt`: when its request went (default `now`, as fresh as news gets).
   */
  observe(headers: IncomingHttpHeaders | Record<string, string | undefined>, now = Date.now(), sentAt = now): void {
    const stated = rateHeadersOf(headers, now);
    if (stated === undefined) return;
    const { limit, remaining, resetAt } = stated;
    if (this.#oldNews(resetAt, sentAt)) return;
    // Answers arrive out of order: within one window, the lowest remaining is the latest news.
    if (this.resetAt !== undefined && resetAt === this.resetAt && this.remaining !== undefined) {
      this.remaining = Math.min(this.remaining, remaining);
    } else {
      this.remaining = remaining;
      this.#windowSentAt = sentAt;
      // Another window: the spacing of the last one's last tenth is over.
      this.#spacedUntil = 0;
    }
    this.limit = limit;
    this.resetAt = resetAt;
  }

  /**
   * Marks the budget spent (a primary-limit 403/429), until `resetAt` if known (at most MAX_LIMIT_WAIT_MS away);
   * `statedResetAt` is the reset the refusal stated (undefined: none), `sentAt` when its request went.
   */
  exhausted(resetAt: number | undefined, now = Date.now(), options: { statedResetAt?: number; sentAt?: number } = {}): void {
    // A refusal in a window that a later request has seen reset spends nothing of the current one.
    if (options.statedResetAt !== undefined && this.#oldNews(options.statedResetAt, options.sentAt ?? now)) return;
    this.remaining = 0;
    this.#windowSentAt = options.sentAt ?? now;
    // Whole milliseconds: a fraction would let the waits computed from it pass their bound by that fraction.
    if (resetAt !== undefined && !Number.isNaN(resetAt)) this.resetAt = Math.ceil(Math.min(Math.max(0, resetAt), now + MAX_LIMIT_WAIT_MS));
  }

  /** One request's worth spent whose answer's headers were not read (a release asset's download): counted until an answer says. */
  spent(): void {
    if (this.remaining !== undefined) this.remaining = Math.max(0, this.remaining - 1);
  }

  /**
   * Whether an answer stating `resetAt` to a request sent at `sentAt` tells of an earlier
   * window than the one known: its request went no later than the one that told of the
   * current window. (A later request stating an earlier reset is believed: the host moved it.)
   */
  #oldNews(resetAt: number | undefined, sentAt: number): boolean {
    return resetAt !== undefined && this.resetAt !== undefined && resetAt < this.resetAt && sentAt <= this.#windowSentAt;
  }

  /** Requests this token can still send in the current window (unknown budgets count as plenty). */
  available(now: number): number {
    if (this.limit === undefined || this.remaining === undefined) return Number.MAX_SAFE_INTEGER;
    if (this.resetAt !== undefined && now >= this.resetAt + RESET_SLACK_MS) return this.limit - this.inFlight;
    return this.remaining - this.inFlight;
  }

  /** Milliseconds to wait before this token may send the next request; Infinity when spent with no known reset. */
  delay(now: number): number {
    const paused = Math.max(0, this.nextAt - now);
    const available = this.available(now);
    if (available > 0 && (this.limit === undefined || available > this.limit * RESERVE_SHARE)) return paused;
    if (this.resetAt === undefined) return available > 0 ? paused : 60_000;
    const toReset = this.resetAt + RESET_SLACK_MS - now;
    if (toReset <= 0) return paused;
    if (available <= 0) return Math.max(paused, toReset);
    // The last tenth: each request taken spaces the next (take); the first goes at once.
    return Math.max(paused, this.#spacedUntil - now);
  }

  /** Milliseconds to the reset, as stated (whole seconds, so the window may be back up to a second sooner); undefined when unknown. */
  toReset(now: number): number | undefined {
    return this.resetAt === undefined ? undefined : this.resetAt - now;
  }

  /** Takes a slot for a request now: it counts as in flight, and paced requests are spaced. */
  take(now: number): void {
    this.inFlight++;
    const available = this.available(now);
    if (this.limit !== undefined && this.resetAt !== undefined && available <= this.limit * RESERVE_SHARE && available > 0) {
      // Spread to when the window may be back (the stated reset is rounded up to the second), not past it:
      // the last requests of the window are not still spaced when the next window's budget is there.
      const spreadEnd = this.resetAt - RESET_POLL_LEAD_MS;
      const spacing = Math.max(0, spreadEnd - now) / (available + 1);
      this.#spacedUntil = Math.min(Math.max(now, this.#spacedUntil) + spacing, Math.max(now, spreadEnd));
    }
  }

  /**
   * Runs `poll` (an ask of the host for this budget), unless one is under way (then its promise: one ask
   * whoever waits) or one began less than `spacingMs` ago (then undefined: wait for `nextPollAt`). Never rejects.
   */
  polled(poll: () => Promise<void>, now: number, spacingMs: number): Promise<void> | undefined {
    if (this.#poll) return this.#poll;
    if (now < this.nextPollAt) return undefined;
    this.nextPollAt = now + spacingMs;
    this.#poll = poll()
      .catch(() => undefined)
      .finally(() => (this.#poll = undefined));
    return this.#poll;
  }

  /** Gives the slot back when the answer came (or the request failed). */
  done(): void {
    this.inFlight = Math.max(0, this.inFlight - 1);
  }

  /** Holds every request of this token until `until` (a secondary limit's retry-after), at most MAX_LIMIT_WAIT_MS away. */
  pauseUntil(until: number, now = Date.now()): void {
    if (!Number.isNaN(until)) this.nextAt = Math.max(this.nextAt, Math.ceil(Math.min(until, now + MAX_LIMIT_WAIT_MS)));
  }

  snapshot(): RateBudget {
    return {
      credential: this.credential,
      limit: this.limit ?? null,
      remaining: this.remaining ?? null,
      resetAt: this.resetAt !== undefined ? new Date(this.resetAt).toISOString() : null,
    };
  }
}

/** The budgets of this process, per API URL and credential (shared across imports). */
export class TokenBudgets {
  readonly #budgets = new Map<string, TokenBudget>();

  of(apiUrl: string, credential: string | null): TokenBudget {
    const key = `${apiUrl}\u0000${credential ?? ''}`;
    let budget = this.#budgets.get(key);
    if (!budget) this.#budgets.set(key, (budget = new TokenBudget(credential)));
    return budget;
  }
}

/** A counting semaphore: at most `limit` holders at once, served in arrival order. */
export class Semaphore {
  #active = 0;
  readonly #waiting = new WaitQueue();

  constructor(readonly limit: number) {}

  async acquire(signal?: AbortSignal): Promise<() => void> {
    // A waiter woken by a release takes over the releaser's place: #active stays.
    if (this.#active >= this.limit) await this.#waiting.wait(() => undefined, signal);
    else this.#active++;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      if (!this.#waiting.wakeFirst()) this.#active--;
    };
  }
}
