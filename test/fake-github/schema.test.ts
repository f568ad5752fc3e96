import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fixturePath, type Json } from './payloads.js';
import { SchemaChecker, type Schema } from './schema-check.js';
import { startFakeGitHub, type FakeGitHub } from './server.js';
import { api } from './walk.js';

const spec = JSON.parse(readFileSync(fixturePath('openapi-schemas.json'), 'utf8')) as { operations: Record<string, Schema>; components: Record<string, Schema> };
const examples = JSON.parse(readFileSync(fixturePath('openapi-examples.json'), 'utf8')) as { operations: Record<string, { path: string }> };
const checker = new SchemaChecker(spec.components);
// GitHub's issue-event-for-issue (an anyOf of typed events) has no member for state changes and references;
// those are checked against the generic issue-event schema instead.
const UNTYPED_EVENTS = new Set(['closed', 'reopened', 'merged', 'referenced', 'head_ref_deleted']);

let fake: FakeGitHub;
const TOKEN = 'schema-token';
const answers = new Map<string, Json[]>();

/** operationId → paths (after /repos/{o}/{r} when starting with '/'; else after /api/v3) to validate. */
const CASES: Record<string, string[]> = {
  'repos/get': [''],
  'issues/list-for-repo': ['/issues?state=all&per_page=100'],
  'issues/get': ['/issues/1', '/issues/3', '/issues/6'],
  'issues/list-comments': ['/issues/1/comments', '/issues/8/comments'],
  'issues/list-comments-for-repo': ['/issues/comments?per_page=100'],
  'issues/list-events': Array.from({ length: 18 }, (_, i) => `/issues/${i + 1}/events`),
  'issues/list-events-for-repo': ['/issues/events?per_page=100'],
  'pulls/list': ['/pulls?state=all'],
  'pulls/get': ['/pulls/3', '/pulls/5', '/pulls/11', '/pulls/17'],
  'pulls/list-reviews': ['/pulls/3/reviews', '/pulls/5/reviews'],
  'pulls/list-review-comments': ['/pulls/3/comments', '/pulls/5/comments'],
  'pulls/list-review-comments-for-repo': ['/pulls/comments?per_page=100'],
  'issues/list-labels-for-repo': ['/labels'],
  'issues/list-milestones': ['/milestones?state=all'],
  'repos/list-releases': ['/releases'],
  'repos/list-collaborators': ['/collaborators'],
  'repos/list-branches': ['/branches?protected=true', '/branches'],
  'repos/get-branch-protection': ['/branches/main/protection', '/branches/release/1.x/protection'],
  'users/get-by-username': ['users/alice', 'users/dependabot%5Bbot%5D', 'users/acme-org'],
  'rate-limit/get': ['rate_limit'],
};

beforeAll(async () => {
  fake = await startFakeGitHub({ tokens: [TOKEN], git: false });
  const repo = `${fake.apiUrl}/repos/acme-org/widgets`;
  for (const [operation, paths] of Object.entries(CASES)) {
    const bodies: Json[] = [];
    for (const path of paths) {
      const url = path === '' || path.startsWith('/') ? `${repo}${path}` : `${fake.apiUrl}/${path}`;
      const response = await api(url, { token: TOKEN });
      if (response.status !== 200) throw new Error(`${url}: ${response.status} ${response.text}`);
      bodies.push(response.body);
    }
    answers.set(operation, bodies);
  }
});

afterAll(async () => {
  await fake?.close();
});

describe('the fake answers as the OpenAPI description says', () => {
  it('covers exactly the extracted operations', () => {
    expect(Object.keys(CASES).sort()).toEqual(Object.keys(spec.operations).sort());
    expect(Object.keys(examples.operations).sort()).toEqual(Object.keys(spec.operations).sort());
  });

  for (const operation of Object.keys(CASES)) {
    it(`${operation} matches its response schema`, () => {
      const bodies = answers.get(operation) ?? [];
      expect(bodies.length).toBeGreaterThan(0);
      for (const body of bodies) {
        if (Array.isArray(body)) expect(body.length).toBeGreaterThan(0);
        if (operation === 'issues/list-events') {
          for (const [index, event] of (body as Json[]).entries()) {
            const schema = UNTYPED_EVENTS.has(event.event) ? { $ref: '#/components/schemas/issue-event' } : (spec.operations[operation] as Schema).items as Schema;
            expect(checker.check(event, schema, `/${index}`), `${event.event} event`).toEqual([]);
          }
        } else {
          expect(checker.check(body, spec.operations[operation] as Schema)).toEqual([]);
        }
      }
    });
  }

  it('the checker rejects what the schemas forbid (so the checks above can fail)', () => {
    const [issue] = answers.get('issues/get') ?? [];
    const schema = spec.operations['issues/get'] as Schema;
    expect(checker.check({ ...issue, number: 'one' }, schema).map((e) => e.path)).toContain('/number');
    const { title: _title, ...untitled } = issue;
    expect(checker.check(untitled, schema)[0]?.message).toMatch(/missing required property title/);
    expect(checker.check({ ...issue, state_reason: 'bored' }, schema)[0]?.message).toMatch(/not in enum/);
    expect(checker.check({ ...issue, user: { login: 'x' } }, schema).length).toBeGreaterThan(0);
    expect(checker.check({ ...issue, milestone: null }, schema)).toEqual([]);
  });

  it('every URL in every payload points at the fake, and nothing of the example repository is left', () => {
    const webHost = new URL(fake.webUrl).host;
    const allowed = [fake.apiUrl, fake.webUrl, fake.payloads.hosts.uploadsUrl, `git://${webHost}/`, `git@${webHost}:`];
    const foreign: string[] = [];
    const leftovers: string[] = [];
    const visit = (value: Json, path: string) => {
      if (typeof value === 'string') {
        if (/octocat|hello-world|github\.com|justice-league|1296269/i.test(value) && !path.endsWith('/body')) leftovers.push(`${path}: ${value}`);
        if (/^(https?:|git:|git@)/.test(value) && !allowed.some((prefix) => value.startsWith(prefix))) foreign.push(`${path}: ${value}`);
      } else if (value && typeof value === 'object') {
        for (const [key, item] of Object.entries(value)) visit(item, `${path}/${key}`);
      }
    };
    for (const [operation, bodies] of answers) bodies.forEach((body, i) => visit(body, `${operation}[${i}]`));
    expect(leftovers).toEqual([]);
    expect(foreign).toEqual([]);
  });

  it('links between objects are consistent', () => {
    const repo = `${fake.apiUrl}/repos/acme-org/widgets`;
    const [issues] = answers.get('issues/list-for-repo') as Json[][];
    const issueUrls = new Set((issues as Json[]).map((i) => i.url));
    for (const issue of issues as Json[]) {
      expect(issue.url).toBe(`${repo}/issues/${issue.number}`);
      expect(issue.html_url).toBe(`${fake.webUrl}/acme-org/widgets/${issue.pull_request ? 'pull' : 'issues'}/${issue.number}`);
      if (issue.pull_request) expect(issue.pull_request.url).toBe(`${repo}/pulls/${issue.number}`);
    }
    const [comments] = answers.get('issues/list-comments-for-repo') as Json[][];
    for (const c of comments as Json[]) {
      expect(issueUrls.has(c.issue_url)).toBe(true);
      expect(c.url).toBe(`${repo}/issues/comments/${c.id}`);
    }
    const [events] = answers.get('issues/list-events-for-repo') as Json[][];
    for (const e of events as Json[]) {
      expect(issueUrls.has(e.issue.url)).toBe(true);
      expect(e.issue).not.toHaveProperty('closed_by');
    }
    const [reviewComments] = answers.get('pulls/list-review-comments-for-repo') as Json[][];
    const ids = new Set((reviewComments as Json[]).map((c) => c.id));
    for (const c of reviewComments as Json[]) {
      expect(c.pull_request_url).toMatch(new RegExp(`^${repo}/pulls/\\d+$`));
      if ('in_reply_to_id' in c) expect(ids.has(c.in_reply_to_id)).toBe(true);
    }
    expect((reviewComments as Json[]).some((c) => 'in_reply_to_id' in c)).toBe(true);
    const [pulls] = answers.get('pulls/list') as Json[][];
    for (const p of pulls as Json[]) {
      expect(p).not.toHaveProperty('merged_by');
      expect(p).not.toHaveProperty('review_comments');
      expect(p).toHaveProperty('requested_reviewers');
      expect(p).toHaveProperty('requested_teams');
      expect(p.issue_url).toBe(`${repo}/issues/${p.number}`);
    }
    const [merged] = answers.get('pulls/get') as Json[];
    expect(merged.merged).toBe(true);
    expect(merged.merged_by.login).toBe('alice');
    expect(merged.review_comments).toBe(5);
    const [release] = answers.get('repos/list-releases')?.[0] as Json[];
    expect(release.assets[0].browser_download_url.startsWith(`${fake.webUrl}/acme-org/widgets/releases/download/`)).toBe(true);
  });
});
