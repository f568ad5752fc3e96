import { describe, expect, it } from 'vitest';
import { runFakeGitHub } from './cli.js';
import { api } from './walk.js';

describe('the standalone command line', () => {
  it('starts a generated project with the given limits and prints one JSON line', async () => {
    const lines: string[] = [];
    const fake = await runFakeGitHub(['--issues', '200', '--pulls', '20', '--comments-per-issue', '2', '--tokens', 'a,b', '--limit', '50', '--latency-ms', '5', '--page-cap-items', '100', '--no-git', '--seed', '9'], (text) => lines.push(text));
    try {
      expect(fake).toBeDefined();
      expect(lines).toHaveLength(1);
      expect(lines[0]?.endsWith('\n')).toBe(true);
      const info = JSON.parse(lines[0] as string);
      expect(info).toMatchObject({ apiUrl: fake?.apiUrl, webUrl: fake?.webUrl, pid: process.pid, budget: fake?.budget() });
      expect(info.apiUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/api\/v3$/);
      expect(info.expected).toMatchObject({ issue: 200, pull_request: 20, note: 440 });
      const answer = await api(`${info.apiUrl}/repos/acme-org/bigrepo/issues/comments?per_page=100&page=2`, { token: 'b' });
      expect(answer.status).toBe(422);
      expect(answer.headers.get('x-ratelimit-limit')).toBe('50');
      expect(fake?.requests[0]?.tokenIndex).toBe(1);
    } finally {
      await fake?.close();
    }
  });

  it('serves the small project by default and refuses bad options', async () => {
    const lines: string[] = [];
    const fake = await runFakeGitHub(['--small', '--no-git'], (text) => lines.push(text));
    try {
      expect(JSON.parse(lines[0] as string).expected.issue).toBe(12);
    } finally {
      await fake?.close();
    }
    await expect(runFakeGitHub(['--limit', 'lots'], () => undefined)).rejects.toThrow(/--limit/);
    await expect(runFakeGitHub(['--bogus'], () => undefined)).rejects.toThrow();
  });
});
