import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { GithubClient } from '../../src/importer/github/client.js';
import { TokenBudget, TokenBudgets } from '../../src/importer/github/pacer.js';
import { RESET_POLL_LEAD_MS, RESET_POLL_MS } from '../../src/importer/github/reset-wait.js';
import { loopbackEgress } from '../support/egress.js';

/*
 * Issue 29 (a full import's wall time against the least the primary limit
 * allows): a window's whole budget is spent, its last tenth spread to when
 * the next window may begin, and the next window is seen as soon as it is
 * back — by asking /rate_limit (free) near the reset, which GitHub states
 * rounded up to the second — never by a request that would be refused.
 */

const NOW = Date.UTC(2025, 0, 1);
const headers = (limit: number, remaining: number, resetAt: number) => ({ 'x-ratelimit-limit': String(limit), 'x-ratelimit-remaining': String(remaining), 'x-ratelimit-reset': String(resetAt / 1000) });

describe('a token budget', () => {
  it('spends its last tenth: the first request at once, the next ones spaced, every one before the window may be back', () => {
    const budget = new TokenBudget('GH');
    const resetAt = NOW + 20_000;
    budget.observe(headers(100, 5, resetAt), NOW);
    const sent: number[] = [];
    for (let now = NOW; now < resetAt && sent.length < 10; ) {
      const delay = budget.delay(now);
      if (delay > 0 && budget.available(now) <= 0) break;
      now += delay;
      budget.take(now);
      budget.done();
      budget.spent();
      sent.push(now);
    }
    expect(sent).toHaveLength(5);
    expect(sent[0]).toBe(NOW);
    for (let n = 1; n < sent.length; n++) expect(sent[n]! - sent[n - 1]!).toBeGreaterThan(1000);
    expect(sent.at(-1)!).toBeLessThanOrEqual(resetAt - RESET_POLL_LEAD_MS);
    // Spent: it waits for the reset (and its slack), the clock's answer when nobody says sooner.
    expect(budget.delay(sent.at(-1)!)).toBeGreaterThanOrEqual(resetAt - sent.at(-1)!);
  });

  it('believes no answer from a window already over: late news neither restores nor spends the current window', () => {
    const budget = new TokenBudget('GH');
    const first = NOW + 5000;
    const second = NOW + 65_000;
    budget.observe(headers(100, 3, first), NOW + 10, NOW);
    // The next window, told by an answer to a request sent later.
    budget.observe(headers(100, 99, second), NOW + 5010, NOW + 5005);
    // An answer to a request sent before that one, of the window before: old news.
    budget.observe(headers(100, 0, first), NOW + 5020, NOW + 4990);
    expect([budget.remaining, budget.resetAt]).toEqual([99, second]);
    budget.exhausted(first + 1000, NOW + 5030, { statedResetAt: first, sentAt: NOW + 4995 });
    expect([budget.remaining, budget.resetAt]).toEqual([99, second]);
    // The same window's answers: the lowest remaining is the latest.
    budget.observe(headers(100, 97, second), NOW + 5040, NOW + 5030);
    budget.observe(headers(100, 98, second), NOW + 5050, NOW + 5020);
    expect(budget.remaining).toBe(97);
    // A request sent after it that states an earlier reset: the host moved it, believed.
    budget.observe(headers(100, 40, NOW + 30_000), NOW + 5060, NOW + 5055);
    expect([budget.remaining, budget.resetAt]).toEqual([40, NOW + 30_000]);
  });

  it('asks for its budget once at a time, whoever waits, and not again within the spacing', async () => {
    const budget = new TokenBudget('GH');
    let asks = 0;
    let answer: () => void = () => undefined;
    const ask = () => {
      asks++;
      return new Promise<void>((resolve) => (answer = resolve));
    };
    const one = budget.polled(ask, NOW, RESET_POLL_MS);
    expect(budget.polled(ask, NOW + 1, RESET_POLL_MS)).toBe(one);
    answer();
    await one;
    expect(budget.polled(ask, NOW + RESET_POLL_MS - 1, RESET_POLL_MS)).toBeUndefined();
    expect(budget.polled(async () => Promise.reject(new Error('host down')), NOW + RESET_POLL_MS, RESET_POLL_MS)).toBeDefined();
    expect(asks).toBe(1);
  });
});

describe('a client waiting for a spent window', () => {
  let server: Server | undefined;
  afterEach(async () => {
    await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
    server = undefined;
  });

  /**
   * A host with a window of `limit` requests, its reset stated a second or two
   * away (whole seconds), that is back once it has been asked /rate_limit
   * three times while spent: a counted request before that is refused 403, as GitHub
   * refuses one before its reset.
   */
  async function host(log: string[], limit = 2): Promise<string> {
    let used = 0;
    let asksWhileSpent = 0;
    let resetAt = (Math.ceil(Date.now() / 1000) + 1) * 1000;
    const rate = () => headers(limit, Math.max(0, limit - used), resetAt);
    server = createServer((req, res) => {
      req.resume();
      if (req.url?.startsWith('/rate_limit')) {
        if (used >= limit && ++asksWhileSpent === 3) {
          used = 0;
          asksWhileSpent = 0;
          resetAt += 60_000;
        }
        log.push('rate_limit');
        res.writeHead(200, { 'content-type': 'application/json', ...rate() });
        res.end(JSON.stringify({ resources: { core: { limit, remaining: Math.max(0, limit - used), reset: resetAt / 1000 } } }));
        return;
      }
      if (used >= limit) {
        log.push('403');
        res.writeHead(403, { 'content-type': 'application/json', ...rate() });
        res.end(JSON.stringify({ message: 'API rate limit exceeded for user ID 1.' }));
        return;
      }
      used++;
      log.push(req.url ?? '');
      res.writeHead(200, { 'content-type': 'application/json', ...rate() });
      res.end('[]');
    });
    await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', () => resolve()));
    return `http://127.0.0.1:${(server!.address() as AddressInfo).port}`;
  }

  it('sees the window back by asking /rate_limit, before the reset it was told, and is never refused', async () => {
    const log: string[] = [];
    const waits: number[] = [];
    const apiUrl = await host(log);
    const github = new GithubClient({ apiUrl, tokens: [], budgets: new TokenBudgets(), concurrency: 2, policy: loopbackEgress(), retries: 0, retryBaseMs: 1, onRateLimitWait: (ms) => waits.push(ms) });
    await github.learnBudgets();
    for (const path of ['/a', '/b', '/c']) expect((await github.get(path)).status).toBe(200);
    expect(log.filter((entry) => entry === '403')).toEqual([]);
    // The third request went after the third ask (the one that saw the window back), as soon as it answered.
    expect(log.slice(log.indexOf('/b') + 1)).toEqual(['rate_limit', 'rate_limit', 'rate_limit', '/c']);
    expect(waits).toHaveLength(1);
    expect(github.counts.counted).toBe(3);
    github.close();
  }, 10_000);

  it('lets requests woken together take only the budget there is: no two see the same last unit free', async () => {
    const log: string[] = [];
    const apiUrl = await host(log, 20);
    const github = new GithubClient({ apiUrl, tokens: [], budgets: new TokenBudgets(), concurrency: 8, policy: loopbackEgress(), retries: 0, retryBaseMs: 1 });
    await github.learnBudgets();
    // More at once than it lets go first, so the in-flight limit grows (slow start) to let eight go at once.
    await Promise.all(Array.from({ length: 16 }, (_, n) => github.get(`/warm${n}`)));
    expect(github.budgets()[0]!.flight.limit).toBe(8);
    const answers = await Promise.all(Array.from({ length: 8 }, (_, n) => github.get(`/burst${n}`)));
    expect(answers.map((answer) => answer.status)).toEqual(Array(8).fill(200));
    // Four went in the window's last four units, the others once /rate_limit said the next window was there:
    // any more in the first window would have been refused.
    expect(log.filter((entry) => entry === '403')).toEqual([]);
    expect([github.counts.counted, github.counts.retried]).toEqual([24, 0]);
    github.close();
  }, 10_000);

  it('counts a release asset download of the API host as one request of the budget, paced with the others', async () => {
    const log: string[] = [];
    const apiUrl = await host(log);
    const github = new GithubClient({ apiUrl, tokens: [], budgets: new TokenBudgets(), concurrency: 2, policy: loopbackEgress(), retries: 0, retryBaseMs: 1 });
    await github.get('/a');
    const [budget] = github.budgets();
    expect(budget!.remaining).toBe(1);
    const inFlight: number[] = [];
    const answer = await github.paced(new URL('/asset', apiUrl), async () => {
      inFlight.push(budget!.inFlight);
      const response = await fetch(new URL('/asset', apiUrl));
      return response.status;
    }, (status) => status === 200);
    expect([answer, inFlight, budget!.remaining, budget!.inFlight]).toEqual([200, [1], 0, 0]);
    // The budget is spent: the next request waits for the window rather than being refused.
    expect((await github.get('/b')).status).toBe(200);
    expect(log.filter((entry) => entry === '403')).toEqual([]);
    github.close();
  }, 10_000);

  it('sends again at once a request whose connection was reset (a kept-alive one the host closed over the wait), once', async () => {
    let resets = 2;
    server = createServer((req, res) => {
      req.resume();
      if (req.url?.startsWith('/x') && resets-- > 0) {
        req.socket.destroy();
        return;
      }
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end('[]');
    });
    await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', () => resolve()));
    const apiUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    // No retry left, and a backoff longer than the test: only the reset's own resend can answer.
    const github = new GithubClient({ apiUrl, tokens: [], budgets: new TokenBudgets(), concurrency: 1, policy: loopbackEgress(), retries: 0, retryBaseMs: 3_600_000 });
    await expect(github.get('/x')).rejects.toThrow(/gave up after 1 attempts/);
    resets = 1;
    expect((await github.get('/x')).status).toBe(200);
    expect(github.counts.retried).toBe(2);
    github.close();
  });
});
