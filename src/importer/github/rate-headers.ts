import type { IncomingHttpHeaders } from 'node:http';

/*
 * The numbers of an API answer's headers that pacing and walks act on:
 * `x-ratelimit-*`, `retry-after` and `date`. The API host is not trusted
 * (a GitHub Enterprise server may be anyone's): each number is bounded here,
 * before anything waits on it, so a reset in the year 275760, a retry-after
 * of 1e308 seconds, a negative or NaN limit or a date out of Date's range
 * can make an import wait at most MAX_LIMIT_WAIT_MS, and never throws.
 */

/**
 * The longest a rate limit makes requests wait before they try again:
 * GitHub's primary window lasts an hour (a minute more for clocks that
 * differ). A reset or retry-after further away is waited for this long;
 * the next answer then says again how things stand. Also far below the
 * largest timer (2^31 - 1 ms).
 */
export const MAX_LIMIT_WAIT_MS = 61 * 60_000;
/** The largest rate limit believed (GitHub's largest is 15,000 an hour; a GHE server may set more): keeps the pacer's arithmetic exact. */
export const MAX_RATE_LIMIT = 1_000_000_000;
/** A server `date` further than this from our clock is not believed (our clock is used instead). */
export const MAX_CLOCK_SKEW_MS = 24 * 3_600_000;
/** Longest header text parsed as a number or a date (anything longer is not one). */
const MAX_NUMBER_TEXT = 64;

type Headers = IncomingHttpHeaders | Record<string, string | string[] | undefined>;

/** A header's text, when it has one value of a sane length. */
function textOf(value: unknown): string | undefined {
  return typeof value === 'string' && value.length <= MAX_NUMBER_TEXT ? value.trim() : undefined;
}

/** A whole non-negative number written in digits, at most `max` (more digits than fit: `max`); undefined otherwise. */
function wholeNumber(value: unknown, max: number): number | undefined {
  const text = textOf(value);
  if (text === undefined || !/^\d+$/.test(text)) return undefined;
  return Math.min(Number(text), max);
}

/** A token's budget as one answer states it, bounded. */
export interface RateHeaders {
  limit: number;
  /** At most `limit`. */
  remaining: number;
  /** Epoch ms of the reset, at most MAX_LIMIT_WAIT_MS from `now`; undefined when not stated. */
  resetAt: number | undefined;
}

/**
 * `x-ratelimit-limit`, `-remaining` and `-reset` of an answer; undefined
 * unless limit and remaining are both whole numbers. (`x-ratelimit-used`
 * is limit less remaining, so it is not read.)
 */
export function rateHeadersOf(headers: Headers, now: number): RateHeaders | undefined {
  const limit = wholeNumber(headers['x-ratelimit-limit'], MAX_RATE_LIMIT);
  const remaining = wholeNumber(headers['x-ratelimit-remaining'], MAX_RATE_LIMIT);
  if (limit === undefined || remaining === undefined) return undefined;
  return { limit, remaining: Math.min(remaining, limit), resetAt: resetAtOf(headers['x-ratelimit-reset'], now) };
}

/** Whether an answer says its budget is spent (`x-ratelimit-remaining: 0`, however written). */
export function budgetSpent(headers: Headers): boolean {
  return wholeNumber(headers['x-ratelimit-remaining'], MAX_RATE_LIMIT) === 0;
}

/**
 * `x-ratelimit-reset` (epoch seconds) as epoch ms, no later than
 * MAX_LIMIT_WAIT_MS from `now`; undefined when it is not a whole number.
 */
export function resetAtOf(value: unknown, now: number): number | undefined {
  const seconds = wholeNumber(value, Number.MAX_SAFE_INTEGER);
  if (seconds === undefined) return undefined;
  return Math.min(seconds * 1000, now + MAX_LIMIT_WAIT_MS);
}

/**
 * The server's `date` in epoch ms, when it parses and is within
 * MAX_CLOCK_SKEW_MS of `now`; else `now`. (Since watermarks are taken from
 * it: a date past Date's range would make them throw, one far off would
 * make a sync ask for the wrong window.)
 */
export function serverDateOf(value: unknown, now: number): number {
  const text = textOf(value);
  const at = text ? Date.parse(text) : NaN;
  return Number.isFinite(at) && Math.abs(at - now) <= MAX_CLOCK_SKEW_MS ? at : now;
}
