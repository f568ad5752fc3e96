import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, describe, expect, it } from 'vitest';
import { GithubClient } from '../../src/importer/github/client.js';
import { TokenBudgets } from '../../src/importer/github/pacer.js';
import { loopbackEgress } from '../support/egress.js';
import { generateProject } from '../fake-github/index.js';
import { credentialNames, expectedCounts, importedCounts, startImportHarness, type ImportHarness } from './harness.js';

/*
 * Issue 29: against a host allowing 6 concurrent requests per token, an
 * import asking for 20 in flight used to keep 20 going and collect hundreds
 * of secondary-limit answers. The pacer now learns the host's limit: a
 * handful of answers for the whole import, and everything imported.
 */
describe('an import against a host with a secondary limit of 6 concurrent requests', () => {
  let h: ImportHarness;
  afterAll(async () => h?.close());

  it('asks 20 in flight, gets at most 10 secondary-limit answers, and imports everything', async () => {
    const project = generateProject({ issues: 80, pulls: 20, commentsPerIssue: 4, reviewCommentsPerPull: 3, reviewsPerPull: 2, users: 30, seed: 29 });
    h = await startImportHarness({ fake: { project, maxConcurrent: 6, secondaryRetryAfterS: 1, latencyMs: 20 } });
    const record = await h.app.importer.create({ project: h.project, apiUrl: h.fake.apiUrl, credentials: credentialNames(1), concurrency: 20 });
    const { outcome } = await h.app.importer.runHere(record.name);
    const status = await h.app.importer.status(record.name);
    expect(status.failure).toBeNull();
    expect(outcome).toBe('synced');
    expect(importedCounts(status)).toEqual(expectedCounts(h.fake));
    const secondary = h.fake.requests.filter((entry) => entry.host === 'api' && entry.status === 403);
    expect(secondary.length).toBeGreaterThan(0);
    expect(secondary.length).toBeLessThanOrEqual(10);
    // Status counts the API client's answers; release asset downloads are paced with them but read only the status.
    const downloads = secondary.filter((entry) => entry.path.includes('/releases/assets/'));
    expect(status.requests.secondaryLimited).toBe(secondary.length - downloads.length);
  }, 120_000);
});

describe('a secondary-limit refusal amid other requests', () => {
  let server: Server | undefined;
  afterAll(async () => new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve())));

  it('makes the refused request wait its retry-after, and the token\'s other requests go on meanwhile', async () => {
    const arrivals: { path: string; at: number }[] = [];
    let refused = false;
    server = createServer((req, res) => {
      req.resume();
      const path = req.url!.split('?')[0]!;
      arrivals.push({ path, at: Date.now() });
      const answer = (status: number, headers: Record<string, string> = {}, body: unknown = []) => {
        res.writeHead(status, { 'content-type': 'application/json', ...headers });
        res.end(JSON.stringify(body));
      };
      if (path === '/rate_limit') return answer(404, {}, { message: 'Not Found' });
      // /slow holds a place while /refused is answered, so /refused went with another in flight.
      if (path === '/slow') return void setTimeout(() => answer(200), 300);
      if (path === '/refused' && !refused) {
        refused = true;
        return answer(403, { 'retry-after': '2' }, { message: 'You have exceeded a secondary rate limit.' });
      }
      answer(200);
    });
    await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', () => resolve()));
    const apiUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    const waits: number[] = [];
    const github = new GithubClient({ apiUrl, tokens: [], budgets: new TokenBudgets(), concurrency: 2, policy: loopbackEgress(), retries: 0, retryBaseMs: 1, onRateLimitWait: (ms) => waits.push(ms) });
    try {
      const slow = github.get('/slow');
      await new Promise((resolve) => setTimeout(resolve, 50));
      const refusedOnce = github.get('/refused');
      await expect.poll(() => waits).toEqual([2000]);
      // During the refused request's wait, the others still go.
      expect((await github.get('/later')).status).toBe(200);
      expect((await slow).status).toBe(200);
      expect((await refusedOnce).status).toBe(200);
      const at = (path: string) => arrivals.filter((arrival) => arrival.path === path).map((arrival) => arrival.at);
      const [firstTry, secondTry] = at('/refused');
      expect(secondTry! - firstTry!).toBeGreaterThanOrEqual(2000);
      // Before the retry-after was over: a pause of the whole token would have held it back until then.
      expect(at('/later')[0]!).toBeLessThan(firstTry! + 2000);
      expect(github.counts.secondaryLimited).toBe(1);
    } finally {
      github.close();
    }
  });
});
