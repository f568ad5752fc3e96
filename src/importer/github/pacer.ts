import type { IncomingHttpHeaders } from 'node:http';
import { AdaptiveLimit } from './adaptive-limit.js';
import { MAX_LIMIT_WAIT_MS, rateHeadersOf } from './rate-headers.js';
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
 * the rest is spread evenly over the time to the reset, so the token never
 * runs into a 403 and other users of it keep a trickle; at zero, requests
 * wait for the reset (or go to another token with budget).
 */
export class TokenBudget {
  limit: number | undefined;
  remaining: number | undefined;
  /** Epoch ms of the reset, as GitHub gave it (seconds) in milliseconds. */
  resetAt: number | undefined;
  inFlight = 0;
  /** Earliest time the next request may go (pacing, or a secondary limit's retry-after). */
  nextAt = 0;
  /** Requests this token may have in flight on this host, learned from secondary-limit answers (clients raise its ceiling to their concurrency). */
  readonly flight = new AdaptiveLimit(1);

  constructor(readonly credential: string | null) {}

  /** Learns the budget from an answer's headers (any answer with them: 200, 304, 403), bounded (see rate-headers.ts). */
  observe(headers: IncomingHttpHeaders | Record<string, string | undefined>, now = Date.now()): void {
    const stated = rateHeadersOf(headers, now);
    if (stated === undefined) return;
    const { limit, remaining, resetAt } = stated;
    // Answers arrive out of order: within one window, the lowest remaining is the latest news.
    if (this.resetAt !== undefined && resetAt === this.resetAt && this.remaining !== undefined) {
      this.remaining = Math.min(this.remaining, remaining);
    } else {
      this.remaining = remaining;
    }
    this.limit = limit;
    this.resetAt = resetAt;
  }

  /** Marks the budget spent (a primary-limit 403/429), until `resetAt` if known (at most MAX_LIMIT_WAIT_MS away). */
  exhausted(resetAt: number | undefined, now = Date.now()): void {
    this.remaining = 0;
    // Whole milliseconds: a fraction would let the waits computed from it pass their bound by that fraction.
    if (resetAt !== undefined && !Number.isNaN(resetAt)) this.resetAt = Math.ceil(Math.min(Math.max(0, resetAt), now + MAX_LIMIT_WAIT_MS));
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
    return Math.max(paused, toReset / (available + 1));
  }

  /** Takes a slot for a request now: it counts as in flight, and paced requests are spaced. */
  take(now: number): void {
    this.inFlight++;
    const available = this.available(now);
    if (this.limit !== undefined && this.resetAt !== undefined && available <= this.limit * RESERVE_SHARE && available > 0) {
      const spacing = Math.max(0, this.resetAt + RESET_SLACK_MS - now) / (available + 1);
      // Never past the reset: the window's budget is back by then, whatever was spaced before it.
      this.nextAt = Math.min(Math.max(now, this.nextAt) + spacing, this.resetAt + RESET_SLACK_MS);
    }
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
