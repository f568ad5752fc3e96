import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { GithubClient } from '../../src/importer/github/client.js';
import { TokenBudget, TokenBudgets } from '../../src/importer/github/pacer.js';
import { retryAfterMs } from '../../src/util/retry-after.js';
import { MAX_CLOCK_SKEW_MS, MAX_LIMIT_WAIT_MS, MAX_RATE_LIMIT, rateHeadersOf, resetAtOf, serverDateOf } from '../../src/importer/github/rate-headers.js';
import { loopbackEgress } from '../support/egress.js';

/*
 * Absurd numbers in an API host's rate-limit answers (issue 24, finding 3):
 * a reset in the year 3 million, a retry-after of 10^20 seconds, negative,
 * NaN or 1e308 values. Each wait they cause is bounded by MAX_LIMIT_WAIT_MS
 * (after which the request is tried again), never a timer past 2^31 - 1 ms.
 */

const NOW = Date.UTC(2025, 0, 1);
const HUGE = '99999999999999999999999';

describe('the numbers of rate-limit headers, bounded', () => {
  it('x-ratelimit-reset: at most MAX_LIMIT_WAIT_MS away; not a whole number: unknown', () => {
    expect(resetAtOf(String(NOW / 1000 + 30), NOW)).toBe(NOW + 30_000);
    for (const reset of [HUGE, String(Number.MAX_SAFE_INTEGER), '8640000000000']) expect(resetAtOf(reset, NOW)).toBe(NOW + MAX_LIMIT_WAIT_MS);
    for (const reset of ['-1', '1e308', 'NaN', 'Infinity', '1.5', '', ' ', '0x10', undefined, ['1', '2']]) expect(resetAtOf(reset, NOW)).toBeUndefined();
  });

  it('retry-after: seconds or an HTTP-date, from 0 to MAX_LIMIT_WAIT_MS; anything else: unknown (the caller waits its default)', () => {
    expect(retryAfterMs('30', { now: NOW, maxMs: MAX_LIMIT_WAIT_MS })).toBe(30_000);
    expect(retryAfterMs(HUGE, { now: NOW, maxMs: MAX_LIMIT_WAIT_MS })).toBe(MAX_LIMIT_WAIT_MS);
    expect(retryAfterMs(new Date(NOW + 90_000).toUTCString(), { now: NOW, maxMs: MAX_LIMIT_WAIT_MS })).toBe(90_000);
    expect(retryAfterMs('Sat, 13 Sep 275760 00:00:00 GMT', { now: NOW, maxMs: MAX_LIMIT_WAIT_MS })).toBe(MAX_LIMIT_WAIT_MS);
    expect(retryAfterMs('Thu, 01 Jan 1970 00:00:00 GMT', { now: NOW, maxMs: MAX_LIMIT_WAIT_MS })).toBe(0);
    for (const value of ['-5', '1e308', '1.5', 'NaN', 'soon', '', 'x'.repeat(10_000), undefined]) expect(retryAfterMs(value, { now: NOW, maxMs: MAX_LIMIT_WAIT_MS })).toBeUndefined();
  });

  it('x-ratelimit-limit and -remaining: whole numbers up to MAX_RATE_LIMIT, remaining at most the limit', () => {
    expect(rateHeadersOf({ 'x-ratelimit-limit': '5000', 'x-ratelimit-remaining': '4999', 'x-ratelimit-reset': HUGE }, NOW)).toEqual({ limit: 5000, remaining: 4999, resetAt: NOW + MAX_LIMIT_WAIT_MS });
    expect(rateHeadersOf({ 'x-ratelimit-limit': HUGE, 'x-ratelimit-remaining': HUGE }, NOW)).toEqual({ limit: MAX_RATE_LIMIT, remaining: MAX_RATE_LIMIT, resetAt: undefined });
    expect(rateHeadersOf({ 'x-ratelimit-limit': '10', 'x-ratelimit-remaining': '500' }, NOW)).toMatchObject({ limit: 10, remaining: 10 });
    for (const bad of ['-1', 'NaN', '1e308', '']) expect(rateHeadersOf({ 'x-ratelimit-limit': '5000', 'x-ratelimit-remaining': bad }, NOW)).toBeUndefined();
  });

  it('date: believed within MAX_CLOCK_SKEW_MS of our clock, else ours (Date\'s own range ends sooner than some dates parse)', () => {
    expect(serverDateOf(new Date(NOW - 5000).toUTCString(), NOW)).toBe(NOW - 5000);
    for (const date of ['Sat, 13 Sep 275760 00:00:00 GMT', '-271821-04-20T00:00:00Z', new Date(NOW + MAX_CLOCK_SKEW_MS + 1000).toUTCString(), 'garbage', undefined]) expect(serverDateOf(date, NOW)).toBe(NOW);
  });

  it('a token budget waits at most MAX_LIMIT_WAIT_MS for a reset or a pause, whatever it was told', () => {
    const budget = new TokenBudget('GH');
    budget.observe({ 'x-ratelimit-limit': '5000', 'x-ratelimit-remaining': '0', 'x-ratelimit-reset': HUGE }, NOW);
    expect(budget.delay(NOW)).toBeLessThanOrEqual(MAX_LIMIT_WAIT_MS + 1000);
    budget.exhausted(Number.POSITIVE_INFINITY, NOW);
    expect(budget.resetAt).toBe(NOW + MAX_LIMIT_WAIT_MS);
    budget.pauseUntil(1e308, NOW);
    expect(budget.nextAt).toBe(NOW + MAX_LIMIT_WAIT_MS);
    expect(budget.snapshot().resetAt).toBe(new Date(NOW + MAX_LIMIT_WAIT_MS).toISOString());
  });
});

describe('a client told absurd waits by its API host', () => {
  let server: Server | undefined;
  afterEach(async () => {
    await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
    server = undefined;
  });

  /** An API host answering each GET /x with the next of `answers` (then 200 []). */
  async function host(answers: { status: number; headers: Record<string, string>; message?: string }[]): Promise<string> {
    server = createServer((req, res) => {
      req.resume();
      const answer = req.url?.startsWith('/x') ? answers.shift() : undefined;
      const status = req.url?.startsWith('/rate_limit') ? 404 : (answer?.status ?? 200);
      res.writeHead(status, { 'content-type': 'application/json', ...answer?.headers });
      res.end(JSON.stringify(status === 200 ? [] : { message: answer?.message ?? 'Not Found' }));
    });
    await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', () => resolve()));
    return `http://127.0.0.1:${(server!.address() as AddressInfo).port}`;
  }

  function client(apiUrl: string, signal: AbortSignal, waits: number[]): GithubClient {
    return new GithubClient({ apiUrl, tokens: [], budgets: new TokenBudgets(), concurrency: 2, policy: loopbackEgress(), retries: 0, retryBaseMs: 1, signal, onRateLimitWait: (ms) => waits.push(ms) });
  }

  it('a primary limit resetting in 10^23 s: the request waits at most MAX_LIMIT_WAIT_MS before it is sent again', async () => {
    const apiUrl = await host([{ status: 403, headers: { 'x-ratelimit-limit': '60', 'x-ratelimit-remaining': '0', 'x-ratelimit-reset': HUGE }, message: 'API rate limit exceeded' }]);
    const stop = new AbortController();
    const waits: number[] = [];
    const github = client(apiUrl, stop.signal, waits);
    const answer = github.get('/x').catch((error: unknown) => error);
    await expect.poll(() => waits.length).toBe(1);
    const [budget] = github.budgets();
    expect(budget!.resetAt! - Date.now()).toBeLessThanOrEqual(MAX_LIMIT_WAIT_MS);
    expect(waits[0]).toBeLessThanOrEqual(MAX_LIMIT_WAIT_MS + 1000);
    stop.abort(new Error('test over'));
    expect(await answer).toBeInstanceOf(Error);
    github.close();
  });

  it('a secondary limit with retry-after 10^23 s waits MAX_LIMIT_WAIT_MS; with 1e308 or -1, the default minute; with 0, a second (no tight loop), twice as long when refused again', async () => {
    const secondary = (retryAfter: string) => ({ status: 403, headers: { 'retry-after': retryAfter }, message: 'You have exceeded a secondary rate limit' });
    for (const [retryAfter, expected] of [[HUGE, MAX_LIMIT_WAIT_MS], ['1e308', 60_000], ['-1', 60_000]] as const) {
      const apiUrl = await host([secondary(retryAfter)]);
      const stop = new AbortController();
      const waits: number[] = [];
      const github = client(apiUrl, stop.signal, waits);
      const answer = github.get('/x').catch((error: unknown) => error);
      await expect.poll(() => waits.length).toBe(1);
      expect([retryAfter, waits[0]]).toEqual([retryAfter, expected]);
      expect(github.budgets()[0]!.nextAt - Date.now()).toBeLessThanOrEqual(MAX_LIMIT_WAIT_MS);
      stop.abort(new Error('test over'));
      await answer;
      github.close();
      await new Promise<void>((resolve) => server!.close(() => resolve()));
      server = undefined;
    }
    const apiUrl = await host([secondary('0'), secondary('0')]);
    const waits: number[] = [];
    const github = client(apiUrl, new AbortController().signal, waits);
    expect((await github.get('/x')).status).toBe(200);
    // Refused again after its wait: GitHub asks for an exponentially growing wait.
    expect(waits).toEqual([1000, 2000]);
    github.close();
  }, 20_000);
});
