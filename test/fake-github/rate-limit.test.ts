import { afterEach, describe, expect, it } from 'vitest';
import { startFakeGitHub, type FakeGitHub, type FakeGitHubOptions } from './server.js';
import { api } from './walk.js';

let fake: FakeGitHub | undefined;

afterEach(async () => {
  await fake?.close();
  fake = undefined;
});

async function start(options: FakeGitHubOptions): Promise<{ fake: FakeGitHub; repo: string }> {
  fake = await startFakeGitHub({ git: false, ...options });
  return { fake, repo: `${fake.apiUrl}/repos/acme-org/widgets` };
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('primary rate limit', () => {
  it('sends the rate headers on every answer and counts down per token', async () => {
    const { fake, repo } = await start({ tokens: ['a', 'b'], limit: 10 });
    const first = await api(`${repo}/issues`, { token: 'a' });
    expect(first.headers.get('x-ratelimit-limit')).toBe('10');
    expect(first.headers.get('x-ratelimit-remaining')).toBe('9');
    expect(first.headers.get('x-ratelimit-used')).toBe('1');
    expect(first.headers.get('x-ratelimit-resource')).toBe('core');
    const reset = Number(first.headers.get('x-ratelimit-reset'));
    expect(reset).toBeGreaterThan(Date.now() / 1000 + 3500);
    expect(first.headers.get('content-type')).toBe('application/json; charset=utf-8');
    for (const header of ['date', 'etag', 'x-github-request-id', 'x-github-media-type']) expect(first.headers.get(header), header).toBeTruthy();
    const second = await api(`${repo}/issues/99999`, { token: 'a' });
    expect(second.status).toBe(404);
    expect(second.headers.get('x-ratelimit-remaining')).toBe('8');
    expect(Number(second.headers.get('x-ratelimit-reset'))).toBe(reset);
    const other = await api(`${repo}/labels`, { token: 'b' });
    expect(other.headers.get('x-ratelimit-remaining')).toBe('9');
    expect(fake.rate(0)).toMatchObject({ limit: 10, used: 2, remaining: 8 });
    expect(fake.requests.map((r) => r.tokenIndex)).toEqual([0, 0, 1]);
  });

  it('answers 403 with GitHub\'s body when exhausted, and recovers when the window resets', async () => {
    const { fake, repo } = await start({ tokens: ['a'], limit: 3, windowMs: 400 });
    for (let i = 0; i < 3; i++) expect((await api(`${repo}/labels`, { token: 'a' })).status).toBe(200);
    const refused = await api(`${repo}/labels`, { token: 'a' });
    expect(refused.status).toBe(403);
    expect(refused.headers.get('x-ratelimit-remaining')).toBe('0');
    expect(refused.body.message).toMatch(/^API rate limit exceeded for /);
    expect(refused.body.documentation_url).toMatch(/rate-limits/);
    expect(fake.requests.at(-1)?.counted).toBe(false);
    const resetAt = Number(refused.headers.get('x-ratelimit-reset')) * 1000;
    await sleep(Math.max(0, resetAt - Date.now()) + 50);
    const again = await api(`${repo}/labels`, { token: 'a' });
    expect(again.status).toBe(200);
    expect(again.headers.get('x-ratelimit-remaining')).toBe('2');
  });

  it('can answer 429 instead, and exhaust()/resetWindow() drive the window', async () => {
    const { fake, repo } = await start({ tokens: ['a'], exhaustedStatus: 429 });
    fake.exhaust(0, 60_000);
    const refused = await api(`${repo}/issues`, { token: 'a' });
    expect(refused.status).toBe(429);
    expect(refused.body.status).toBe('429');
    expect(Number(refused.headers.get('x-ratelimit-reset'))).toBeGreaterThan(Date.now() / 1000 + 50);
    fake.resetWindow();
    expect((await api(`${repo}/issues`, { token: 'a' })).status).toBe(200);
    expect(fake.rate(0).remaining).toBe(4999);
  });

  it('anonymous requests get 60; unknown tokens 401; no User-Agent 403', async () => {
    const { repo, fake } = await start({ tokens: ['a'] });
    const anon = await api(`${repo}/issues`);
    expect(anon.status).toBe(200);
    expect(anon.headers.get('x-ratelimit-limit')).toBe('60');
    expect(anon.headers.get('x-ratelimit-remaining')).toBe('59');
    const bad = await api(`${repo}/issues`, { token: 'nope' });
    expect(bad.status).toBe(401);
    expect(bad.body).toEqual({ message: 'Bad credentials', documentation_url: 'https://docs.github.com/rest', status: '401' });
    const bearer = await api(`${repo}/issues`, { headers: { authorization: 'Bearer a' } });
    expect(bearer.status).toBe(200);
    expect(bearer.headers.get('x-ratelimit-limit')).toBe('5000');
    const response = await fetch(`${repo}/issues`, { headers: { 'user-agent': '' } });
    expect(response.status).toBe(403);
    expect(await response.text()).toMatch(/User-Agent/);
    expect(fake.requests.map((r) => r.tokenIndex)).toEqual([-1, -1, 0, -1]);
  });

  it('/rate_limit reports the window without counting; it can be disabled like on some GHE servers', async () => {
    const { fake, repo } = await start({ tokens: ['a'], limit: 100 });
    await api(`${repo}/issues`, { token: 'a' });
    const rate = await api(`${fake.apiUrl}/rate_limit`, { token: 'a' });
    expect(rate.body.resources.core).toMatchObject({ limit: 100, used: 1, remaining: 99 });
    expect(rate.body.rate).toEqual(rate.body.resources.core);
    expect(rate.headers.get('x-ratelimit-remaining')).toBe('99');
    expect(fake.rate(0).used).toBe(1);
    await fake.close();
    const disabled = await start({ tokens: ['a'], rateLimitEndpoint: false });
    const answer = await api(`${disabled.fake.apiUrl}/rate_limit`, { token: 'a' });
    expect(answer.status).toBe(404);
    expect(answer.body.message).toBe('Rate limiting is not enabled.');
  });
});

describe('conditional requests', () => {
  it('304 on a matching ETag, no body, not counted for a token (counted when anonymous)', async () => {
    const { fake, repo } = await start({ tokens: ['a'] });
    const first = await api(`${repo}/issues?state=all`, { token: 'a' });
    const etag = first.headers.get('etag') as string;
    expect(etag).toMatch(/^W\/"[0-9a-f]{64}"$/);
    const again = await api(`${repo}/issues?state=all`, { token: 'a', headers: { 'if-none-match': etag } });
    expect(again.status).toBe(304);
    expect(again.text).toBe('');
    expect(again.headers.get('x-ratelimit-remaining')).toBe('4999');
    expect(fake.requests.at(-1)).toMatchObject({ status: 304, notModified: true, counted: false });
    const anon = await api(`${repo}/issues?state=all`, { headers: { 'if-none-match': etag } });
    expect(anon.status).toBe(304);
    expect(anon.headers.get('x-ratelimit-remaining')).toBe('59');
    fake.project.comment(1, 'a change');
    const changed = await api(`${repo}/issues?state=all`, { token: 'a', headers: { 'if-none-match': etag } });
    expect(changed.status).toBe(200);
    expect(changed.headers.get('etag')).not.toBe(etag);
    expect(fake.stats()).toMatchObject({ total: 4, counted: 3, notModified: 2 });
  });
});

describe('secondary rate limit', () => {
  it('refuses requests over maxConcurrent per token with retry-after', async () => {
    const { fake, repo } = await start({ tokens: ['a', 'b'], maxConcurrent: 2, latencyMs: 250, secondaryRetryAfterS: 1 });
    const burst = await Promise.all(Array.from({ length: 5 }, () => api(`${repo}/labels`, { token: 'a' })));
    const statuses = burst.map((r) => r.status).sort();
    expect(statuses).toEqual([200, 200, 403, 403, 403]);
    const refused = burst.find((r) => r.status === 403);
    expect(refused?.headers.get('retry-after')).toBe('1');
    expect(refused?.body.message).toMatch(/^You have exceeded a secondary rate limit/);
    // Another token is not affected, and once the burst is over the first one is served again.
    const [a, b] = await Promise.all([api(`${repo}/labels`, { token: 'a' }), api(`${repo}/labels`, { token: 'b' })]);
    expect([a.status, b.status]).toEqual([200, 200]);
    expect(fake.stats().byStatus).toMatchObject({ 200: 4, 403: 3 });
    expect(fake.rate(0).used).toBe(3);
  });
});
