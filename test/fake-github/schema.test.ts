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

/**
 * operationId → paths (after /repos/{o}/{r} when starting with '/'; else after /api/v3) to validate. The git
 * data's object ids are written `{commit:<ref>}`, `{tree:<ref>}`, `{blob:<ref>:<path>}`: resolved through the
 * fake's own API before the paths are asked (resolvePath).
 */
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
  'issues/get-milestone': ['/milestones/1', '/milestones/2'],
  'issues/get-label': ['/labels/bug', '/labels/GOOD%20FIRST%20ISSUE'],
  'issues/list-labels-on-issue': ['/issues/1/labels'],
  'issues/get-comment': ['/issues/comments/3000000001'],
  'issues/get-event': ['/issues/events/6000000001'],
  'issues/list-events-for-timeline': ['/issues/1/timeline', '/issues/3/timeline', '/issues/5/timeline'],
  'pulls/get-review': ['/pulls/3/reviews/5000000001'],
  'pulls/get-review-comment': ['/pulls/comments/4000000001'],
  'pulls/list-requested-reviewers': ['/pulls/3/requested_reviewers', '/pulls/17/requested_reviewers'],
  'repos/get-latest-release': ['/releases/latest'],
  'repos/get-release': ['/releases/70000001'],
  // The git data, read from the fake's bare repository.
  'repos/get-branch': ['/branches/main', '/branches/release/1.x', '/branches/release%2F1.x'],
  'repos/list-tags': ['/tags'],
  'repos/list-commits': ['/commits?per_page=100', '/commits?sha=release/1.x&path=src/widget.txt', '/commits?author=bob'],
  'repos/get-commit': ['/commits/main', '/commits/release/1.x', '/commits/v1.0.0', '/commits/{commit:main}'],
  'repos/compare-commits-with-basehead': ['/compare/release/1.x...main', '/compare/main...release/1.x', '/compare/v1.0.0...main'],
  'git/list-matching-refs': ['/git/matching-refs/heads', '/git/matching-refs/pull/3', '/git/refs/tags', '/git/refs'],
  'git/get-ref': ['/git/ref/heads/main', '/git/ref/heads/release/1.x', '/git/ref/tags/v1.0.0', '/git/ref/pull/3/head'],
  'git/get-commit': ['/git/commits/{commit:main}', '/git/commits/{commit:release/1.x}'],
  'git/get-tree': ['/git/trees/{tree:main}', '/git/trees/{tree:main}?recursive=1', '/git/trees/v1.0.0'],
  'git/get-blob': ['/git/blobs/{blob:main:README.md}', '/git/blobs/{blob:main:src/widget.txt}'],
  'repos/get-content': ['/contents/README.md', '/contents/src/widget.txt?ref=release/1.x', '/contents/src', '/contents'],
  'repos/get-readme': ['/readme', '/readme?ref=v1.0.0'],
  'pulls/list-commits': ['/pulls/3/commits', '/pulls/5/commits', '/pulls/11/commits', '/pulls/17/commits?per_page=1'],
  'pulls/list-files': ['/pulls/3/files', '/pulls/8/files', '/pulls/14/files?per_page=1'],
};

/** `path` with its `{commit:…}`, `{tree:…}` and `{blob:…:…}` object ids (see CASES) resolved by asking the fake at `repo`. */
async function resolvePath(repo: string, path: string): Promise<string> {
  let resolved = path;
  for (const [written, kind, ref, file] of path.matchAll(/\{(commit|tree|blob):([^:}]+)(?::([^}]+))?\}/g)) {
    const url = kind === 'blob' ? `${repo}/contents/${file}?ref=${encodeURIComponent(ref as string)}` : `${repo}/commits/${ref}`;
    const response = await api(url, { token: TOKEN });
    if (response.status !== 200) throw new Error(`${url}: ${response.status} ${response.text}`);
    const sha = kind === 'tree' ? response.body.commit.tree.sha : response.body.sha;
    resolved = resolved.replace(written, sha as string);
  }
  return resolved;
}

beforeAll(async () => {
  fake = await startFakeGitHub({ tokens: [TOKEN] });
  const repo = `${fake.apiUrl}/repos/acme-org/widgets`;
  for (const [operation, paths] of Object.entries(CASES)) {
    const bodies: Json[] = [];
    for (const written of paths) {
      const path = await resolvePath(repo, written);
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
        // A commit's author or committer email is a GitHub noreply address (`<id>+<login>@users.noreply.github.com`), as on GitHub.
        const noreply = path.endsWith('/email') && /^\d+\+[^@]+@users\.noreply\.github\.com$/.test(value);
        if (/octocat|hello-world|github\.com|justice-league|1296269/i.test(value) && !path.endsWith('/body') && !noreply) leftovers.push(`${path}: ${value}`);
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
    // A pull request's commits end at its head, and its files link to that commit.
    const [pullCommits] = answers.get('pulls/list-commits') as Json[][];
    expect((pullCommits as Json[]).at(-1)?.sha).toBe(merged.head.sha);
    expect((pullCommits as Json[])[0]?.parents[0].sha).toBe(merged.base.sha);
    const [pullFiles] = answers.get('pulls/list-files') as Json[][];
    for (const f of pullFiles as Json[]) expect(f.blob_url).toBe(`${fake.webUrl}/acme-org/widgets/blob/${merged.head.sha}/${f.filename}`);
    const [release] = answers.get('repos/list-releases')?.[0] as Json[];
    expect(release.assets[0].browser_download_url.startsWith(`${fake.webUrl}/acme-org/widgets/releases/download/`)).toBe(true);
  });
});
