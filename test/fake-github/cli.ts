/**
 * The command line of the standalone fake GitHub (see main.ts).
 */
import { parseArgs } from 'node:util';
import { generateProject, smallProject } from './generate.js';
import { startFakeGitHub, type FakeGitHub } from './server.js';

export const USAGE = `usage: main.js [--small | --issues N [--pulls N] [--comments-per-issue N] [--review-comments-per-pull N]
               [--reviews-per-pull N] [--users N] [--seed N]] [--tokens a,b] [--limit N] [--anon-limit N]
               [--window-ms N] [--exhausted-status 403|429] [--max-concurrent N] [--secondary-retry-after-s N]
               [--page-cap-items N] [--latency-ms N] [--no-rate-limit-endpoint] [--no-git] [--link-style repositories|repos]`;

function int(value: string | undefined, name: string): number | undefined {
  if (value === undefined) return undefined;
  const n = Number(value);
  if (!Number.isFinite(n) || n < 0) throw new Error(`--${name} must be a non-negative number, got ${value}`);
  return n;
}

/** Parses the command line, starts the fake and writes its JSON line; undefined after --help. */
export async function runFakeGitHub(args: string[], write: (text: string) => void): Promise<FakeGitHub | undefined> {
  const { values } = parseArgs({
    args,
    options: {
      small: { type: 'boolean' }, issues: { type: 'string' }, pulls: { type: 'string' }, 'comments-per-issue': { type: 'string' },
      'review-comments-per-pull': { type: 'string' }, 'reviews-per-pull': { type: 'string' }, users: { type: 'string' }, seed: { type: 'string' },
      tokens: { type: 'string' }, limit: { type: 'string' }, 'anon-limit': { type: 'string' }, 'window-ms': { type: 'string' },
      'exhausted-status': { type: 'string' }, 'max-concurrent': { type: 'string' }, 'secondary-retry-after-s': { type: 'string' },
      'page-cap-items': { type: 'string' }, 'latency-ms': { type: 'string' }, 'no-rate-limit-endpoint': { type: 'boolean' },
      'no-git': { type: 'boolean' }, 'link-style': { type: 'string' }, help: { type: 'boolean' },
    },
    strict: true,
  });
  if (values.help) {
    write(`${USAGE}\n`);
    return undefined;
  }
  const issues = int(values.issues, 'issues');
  const project = values.small || issues === undefined
    ? smallProject()
    : generateProject({
      issues, pulls: int(values.pulls, 'pulls'), commentsPerIssue: int(values['comments-per-issue'], 'comments-per-issue'),
      reviewCommentsPerPull: int(values['review-comments-per-pull'], 'review-comments-per-pull'), reviewsPerPull: int(values['reviews-per-pull'], 'reviews-per-pull'),
      users: int(values.users, 'users'), seed: int(values.seed, 'seed'),
    });
  const status = int(values['exhausted-status'], 'exhausted-status');
  const linkStyle = values['link-style'];
  if (linkStyle !== undefined && linkStyle !== 'repositories' && linkStyle !== 'repos') throw new Error('--link-style must be repositories or repos');
  const fake = await startFakeGitHub({
    project, tokens: values.tokens?.split(',').filter(Boolean), limit: int(values.limit, 'limit'), anonLimit: int(values['anon-limit'], 'anon-limit'),
    windowMs: int(values['window-ms'], 'window-ms'), exhaustedStatus: status === 429 ? 429 : status === undefined ? undefined : 403,
    maxConcurrent: int(values['max-concurrent'], 'max-concurrent'), secondaryRetryAfterS: int(values['secondary-retry-after-s'], 'secondary-retry-after-s'),
    pageCapItems: int(values['page-cap-items'], 'page-cap-items'), latencyMs: int(values['latency-ms'], 'latency-ms'),
    rateLimitEndpoint: values['no-rate-limit-endpoint'] ? false : undefined, git: values['no-git'] ? false : undefined, linkStyle,
  });
  const { users: _users, attachmentPaths: _paths, missingUsers, attachmentUrls, ...counts } = fake.expected();
  write(`${JSON.stringify({
    apiUrl: fake.apiUrl, webUrl: fake.webUrl, foreignUrl: fake.foreignUrl, gitUrl: fake.gitUrl, wikiGitUrl: fake.wikiGitUrl, pid: process.pid,
    expected: { ...counts, missingUsers, attachmentUrls }, budget: fake.budget({ perPage: 100 }),
  })}\n`);
  return fake;
}
