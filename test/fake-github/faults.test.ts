import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startFakeGitHub, type FakeGitHub, type LogEntry } from './server.js';
import { api } from './walk.js';

const TOKEN = 'fault-token';
let fake: FakeGitHub;
let repo: string;

beforeAll(async () => {
  fake = await startFakeGitHub({ tokens: [TOKEN], git: false, injectedResetInMs: 2000, secondaryRetryAfterS: 2 });
  repo = `${fake.apiUrl}/repos/acme-org/widgets`;
});

afterAll(async () => {
  await fake?.close();
});

beforeEach(() => {
  fake.clearFaults();
  fake.clearLog();
  fake.resetWindow();
  fake.latencyMs = 0;
  fake.onRequest = undefined;
});

describe('fault injection', () => {
  it('502 with GitHub\'s HTML body, once, then normal answers; not counted', async () => {
    const rule = fake.inject({ match: '/issues/comments', fault: '502' });
    const failed = await api(`${repo}/issues/comments`, { token: TOKEN });
    expect(failed.status).toBe(502);
    expect(failed.headers.get('content-type')).toBe('text/html');
    expect(failed.text).toBe('<html><body><h1>502 Bad Gateway</h1></body></html>');
    expect(rule.left).toBe(0);
    expect((await api(`${repo}/issues/comments`, { token: TOKEN })).status).toBe(200);
    expect(fake.requests.map((r) => [r.status, r.counted, r.fault])).toEqual([[502, false, '502'], [200, true, undefined]]);
  });

  it('matches by RegExp and predicate, `times` times; 500 and custom statuses', async () => {
    fake.inject({ match: /\/issues\/\d+$/, times: 2, fault: '500' });
    fake.inject({ match: (req) => req.pathKind === 'labels', fault: { status: 503, body: { message: 'Service Unavailable' }, headers: { 'retry-after': '3' } } });
    expect((await api(`${repo}/issues/1`, { token: TOKEN })).status).toBe(500);
    expect((await api(`${repo}/issues/2`, { token: TOKEN })).status).toBe(500);
    expect((await api(`${repo}/issues/2`, { token: TOKEN })).status).toBe(200);
    expect((await api(`${repo}/issues/2/comments`, { token: TOKEN })).status).toBe(200);
    const unavailable = await api(`${repo}/labels`, { token: TOKEN });
    expect(unavailable.status).toBe(503);
    expect(unavailable.headers.get('retry-after')).toBe('3');
    expect(unavailable.body.message).toBe('Service Unavailable');
  });

  it('secondary and rate-limit faults look like the real answers', async () => {
    fake.inject({ match: '/pulls', fault: 'secondary' });
    const secondary = await api(`${repo}/pulls`, { token: TOKEN });
    expect(secondary.status).toBe(403);
    expect(secondary.headers.get('retry-after')).toBe('2');
    expect(secondary.body.message).toMatch(/secondary rate limit/);
    for (const [fault, status] of [['rate-limit-403', 403], ['rate-limit-429', 429]] as const) {
      fake.inject({ match: '/releases', fault });
      const limited = await api(`${repo}/releases`, { token: TOKEN });
      expect(limited.status).toBe(status);
      expect(limited.headers.get('x-ratelimit-remaining')).toBe('0');
      expect(limited.headers.get('retry-after')).toBeNull();
      const reset = Number(limited.headers.get('x-ratelimit-reset')) * 1000;
      expect(reset).toBeGreaterThan(Date.now());
      expect(reset).toBeLessThanOrEqual(Date.now() + 3000);
      expect(limited.body.message).toMatch(/^API rate limit exceeded/);
    }
    expect(fake.stats().counted).toBe(0);
  });

  it('reset destroys the socket; delayMs and latencyMs slow answers down', async () => {
    fake.inject({ match: '/milestones', fault: 'reset' });
    await expect(api(`${repo}/milestones`, { token: TOKEN })).rejects.toThrow();
    expect(fake.requests.at(-1)?.status).toBe(-1);
    fake.inject({ match: '/labels', fault: { delayMs: 200 } });
    let started = Date.now();
    expect((await api(`${repo}/labels`, { token: TOKEN })).status).toBe(200);
    expect(Date.now() - started).toBeGreaterThanOrEqual(190);
    fake.latencyMs = 120;
    started = Date.now();
    await api(`${repo}/labels`, { token: TOKEN });
    expect(Date.now() - started).toBeGreaterThanOrEqual(110);
  });

  it('onRequest sees every request on arrival; stats group by status and path kind', async () => {
    const seen: LogEntry[] = [];
    fake.onRequest = (entry) => {
      seen.push(entry);
      expect(entry.status).toBe(0);
    };
    await api(`${repo}/issues`, { token: TOKEN });
    await api(`${repo}/issues/1/comments`, { token: TOKEN });
    await api(`${repo}/issues/1/comments`, { token: TOKEN });
    await api(`${fake.webUrl}/user-attachments/assets/3f6c2a8e-1b7d-4c1e-9a55-0d2f8c4b7e11`);
    expect(seen.map((e) => e.pathKind)).toEqual(['issues', 'issue_comments', 'issue_comments', 'attachment']);
    expect(fake.stats()).toEqual({ total: 4, counted: 3, notModified: 0, byStatus: { 200: 4 }, byPathKind: { issues: 1, issue_comments: 2, attachment: 1 } });
    expect(fake.requests[1]).toMatchObject({ method: 'GET', path: '/api/v3/repos/acme-org/widgets/issues/1/comments', query: '', tokenIndex: 0, host: 'api' });
  });

  it('faults apply to the web host too', async () => {
    fake.inject({ match: (req) => req.host === 'web' && req.pathKind === 'attachment', fault: '502' });
    const failed = await api(`${fake.webUrl}/acme-org/widgets/files/9002/notes.txt`);
    expect(failed.status).toBe(502);
    expect(failed.text).toContain('502 Bad Gateway');
    expect((await api(`${fake.webUrl}/acme-org/widgets/files/9002/notes.txt`)).status).toBe(200);
  });
});
