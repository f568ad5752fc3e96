import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fastifySwagger from '@fastify/swagger';
import { RequestError } from '@octokit/request-error';
import { Octokit } from '@octokit/rest';
import Fastify, { type FastifyInstance } from 'fastify';
import { jsonSchemaTransform, serializerCompiler, validatorCompiler, type ZodTypeProvider } from 'fastify-type-provider-zod';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { urlKey } from '../../src/importer/attachments/url-key.js';
import { githubApiRoutes } from '../../src/importer/http/github-api/index.js';
import { buildServer, type ForgesyncServer } from '../../src/server/app.js';
import { AuthFailures, type AuthTokens } from '../../src/server/auth.js';
import { parseReaders } from '../../src/credentials/readers.js';
import { errorHandler } from '../../src/server/errors.js';
import { ServerPaths } from '../../src/util/server-paths.js';
import { guardRequests } from '../../src/server/request-guards.js';
import { openDatabase, type Database } from '../../src/store/database.js';
import { FakeProject, startFakeGitHub } from '../fake-github/index.js';
import { createTestDatabase, openTestForgesync, testConfig, type TestDatabase } from '../support/harness.js';
import { testSecret } from '../support/secrets.js';
import {
  ASSET_BYTES,
  ASSET_URL,
  COLLABORATORS,
  DIFF_NOTES,
  EVENTS,
  IMAGE_BYTES,
  IMAGE_URL,
  LABELS,
  NOTES,
  OWNER,
  PAGE_BYTES,
  PAGE_URL,
  PENDING_URL,
  PROTECTED_BRANCH,
  PROTECTION,
  REPO,
  seedProject,
  served,
  type Seeded,
} from './support/github-api-fixtures.js';
import { onCopy } from './support/on-copy.js';

const READ = testSecret('GITHUB_API_READ_TOKEN');
/** Scoped readers: one whose scope has the import, one whose scope does not. */
const INSIDE = testSecret('GITHUB_API_INSIDE_READER');
const OUTSIDE = testSecret('GITHUB_API_OUTSIDE_READER');
const ADMIN = testSecret('GITHUB_API_ADMIN_TOKEN');

const NOT_FOUND = { message: 'Not Found', documentation_url: 'https://docs.github.com/rest', status: '404' };
/** GitHub's 404 for a known operation: its documentation_url is that operation's page. */
const notFoundOf = (page: string) => ({ ...NOT_FOUND, documentation_url: `https://docs.github.com/rest/${page}` });
const silent = { debug() {}, info() {}, warn() {}, error() {} };

/** A server with only the GitHub-compatible API (and the OpenAPI generator), on 127.0.0.1. */
async function startApi(database: Database, filesDir: string, tokens: AuthTokens): Promise<{ server: FastifyInstance; origin: string }> {
  const server = Fastify();
  await server.register(fastifySwagger, {
    openapi: { info: { title: 'test', version: '1' }, components: { securitySchemes: { bearer: { type: 'http', scheme: 'bearer' } } } },
    transform: jsonSchemaTransform,
  });
  await server.register(githubApiRoutes({ database, tokens, filesDir }), { prefix: '/github' });
  await server.listen({ port: 0, host: '127.0.0.1' });
  const address = server.server.address();
  if (!address || typeof address !== 'object') throw new Error('not listening');
  return { server, origin: `http://127.0.0.1:${address.port}` };
}

const numbers = (items: { number: number }[]) => items.map((item) => item.number);
const ids = (items: { id: number }[]) => items.map((item) => item.id);

describe.each(['sqlite', 'postgres'] as const)('GitHub-compatible API on %s', (kind) => {
  let testDatabase: TestDatabase;
  let database: Database;
  let filesDir: string;
  let seeded: Seeded;
  let server: FastifyInstance;
  let origin: string;
  let octokit: Octokit;
  const repo = { owner: OWNER, repo: REPO };
  /** A raw request to the API (path below /github), with the read token as `Bearer` unless told otherwise. */
  const call = (path: string, headers: Record<string, string> = { authorization: `Bearer ${READ}` }, method = 'GET') =>
    fetch(`${origin}/github${path}`, { method, headers });
  const expect404 = (promise: Promise<unknown>) => expect(promise).rejects.toSatisfy((error: unknown) => error instanceof RequestError && error.status === 404);

  beforeAll(async () => {
    testDatabase = await createTestDatabase(kind);
    database = await openDatabase(testDatabase.url);
    filesDir = mkdtempSync(join(tmpdir(), 'forgesync-import-files-'));
    seeded = await seedProject(database, filesDir);
    const readers = parseReaders({ inside: { token: INSIDE, scope: [`${REPO.slice(0, 3)}*`] }, outside: { token: OUTSIDE, scope: ['team-b/*'] } });
    ({ server, origin } = await startApi(database, filesDir, { admin: ADMIN, read: READ, readers: async () => readers, failures: new AuthFailures() }));
    octokit = new Octokit({ baseUrl: `${origin}/github`, auth: READ, log: silent });
  });

  afterAll(async () => {
    await server?.close();
    await database?.close();
    await testDatabase?.drop();
  });

  it('gets the repository of the import named like it, case-insensitively; the oldest when none is; 404 for a pending one or none', async () => {
    expect((await octokit.rest.repos.get(repo)).data.description).toBe('the github.com copy');
    expect((await octokit.rest.repos.get({ owner: 'OCTOCAT', repo: 'hello-world' })).data.full_name).toBe('octocat/Hello-World');
    expect((await octokit.rest.repos.get({ owner: OWNER, repo: 'spoon-knife' })).data.description).toBe('first spoon');
    await expect404(octokit.rest.repos.get({ owner: OWNER, repo: 'Not-Yet' }));
    await expect404(octokit.rest.issues.listForRepo({ owner: OWNER, repo: 'Not-Yet' }));
    await expect404(octokit.rest.repos.get({ owner: 'someone', repo: REPO }));
  });

  it('lists issues and pull requests with GitHub\'s default filter and order: open, newest first', async () => {
    const { data, headers } = await octokit.rest.issues.listForRepo(repo);
    expect(numbers(data)).toEqual([7, 5, 4, 2, 1]);
    expect(data.find((issue) => issue.number === 7)?.pull_request?.url).toBe(`${origin}/github/repos/${OWNER}/${REPO}/pulls/7`);
    expect(data.find((issue) => issue.number === 5)?.pull_request).toBeUndefined();
    expect(data[0]!.labels).toEqual([expect.objectContaining({ id: 100, name: 'enhancement' })]);
    expect(headers.link).toBeUndefined();
  });

  it('filters issues by state, labels (all required, case-insensitive) and since, and sorts them', async () => {
    const list = async (params: Omit<Parameters<typeof octokit.rest.issues.listForRepo>[0] & object, 'owner' | 'repo'>) =>
      numbers((await octokit.rest.issues.listForRepo({ ...repo, ...params })).data);
    expect(await list({ state: 'closed' })).toEqual([6, 3]);
    expect(await list({ state: 'all' })).toEqual([7, 6, 5, 4, 3, 2, 1]);
    expect(await list({ labels: 'bug' })).toEqual([4, 1]);
    expect(await list({ labels: 'BUG, help wanted' })).toEqual([4]);
    expect(await list({ labels: 'bug,enhancement' })).toEqual([]);
    expect(await list({ state: 'all', since: '2024-02-01T10:00:00Z' })).toEqual([7, 4, 1]);
    // Stored times have whole seconds: a fraction past one excludes it.
    expect(await list({ state: 'all', since: '2024-02-01T10:00:00.001Z' })).toEqual([4, 1]);
    expect(await list({ state: 'all', since: '2024-02-01T12:00:00+02:00' })).toEqual([7, 4, 1]);
    expect(await list({ state: 'all', sort: 'updated', direction: 'asc' })).toEqual([3, 2, 5, 6, 7, 4, 1]);
    expect(await list({ state: 'all', sort: 'comments' })).toEqual([3, 1, 6, 4, 7, 5, 2]);
    expect(await list({ state: 'all', direction: 'asc' })).toEqual([1, 2, 3, 4, 5, 6, 7]);
  });

  it('paginates like GitHub: octokit.paginate sees every item once, in order; Link URLs are absolute', async () => {
    const all = await octokit.paginate(octokit.rest.issues.listForRepo, { ...repo, state: 'all', per_page: 2 });
    expect(numbers(all)).toEqual([7, 6, 5, 4, 3, 2, 1]);

    const first = await octokit.rest.issues.listForRepo({ ...repo, state: 'all', per_page: 2 });
    const path = `${origin}/github/repos/${OWNER}/${REPO}/issues`;
    expect(first.headers.link).toBe(`<${path}?state=all&per_page=2&page=2>; rel="next", <${path}?state=all&per_page=2&page=4>; rel="last"`);
    const second = await octokit.rest.issues.listForRepo({ ...repo, state: 'all', per_page: 2, page: 2 });
    expect(numbers(second.data)).toEqual([5, 4]);
    expect(second.headers.link).toBe(
      `<${path}?state=all&per_page=2&page=1>; rel="prev", <${path}?state=all&per_page=2&page=3>; rel="next", ` +
        `<${path}?state=all&per_page=2&page=4>; rel="last", <${path}?state=all&per_page=2&page=1>; rel="first"`,
    );
    const last = await octokit.rest.issues.listForRepo({ ...repo, state: 'all', per_page: 2, page: 4 });
    expect(numbers(last.data)).toEqual([1]);
    expect(last.headers.link).toBe(`<${path}?state=all&per_page=2&page=3>; rel="prev", <${path}?state=all&per_page=2&page=1>; rel="first"`);
    const past = await octokit.rest.issues.listForRepo({ ...repo, state: 'all', per_page: 2, page: 9 });
    expect(past.data).toEqual([]);
    // Above 100 counts as 100: one page.
    const big = await octokit.rest.issues.listForRepo({ ...repo, state: 'all', per_page: 1000 });
    expect(big.data).toHaveLength(7);
    expect(big.headers.link).toBeUndefined();
  });

  it('gets an issue or a pull request\'s issue shape by number, with downloaded attachment links rewritten', async () => {
    const { data } = await octokit.rest.issues.get({ ...repo, issue_number: 1 });
    expect(data).toMatchObject({ number: 1, id: 1001, title: 'Crash on start', state: 'open', user: { login: 'octocat' } });
    const imageLink = `${origin}/github/attachments/${REPO}/${urlKey(IMAGE_URL)}/screen%20shot%20%231.png`;
    expect(data.body).toBe(
      `It crashes:\n\n![screenshot](${imageLink})\n\nand also ![later](${PENDING_URL}); details: ` +
        `[report](${origin}/github/attachments/${REPO}/${urlKey(PAGE_URL)}/report.html).`,
    );
    // The stored JSON stays GitHub's.
    const stored = await database.db.selectFrom('import_objects').select('data').where('import_id', '=', seeded.mainId).where('type', '=', 'issue').where('key', '=', '1001').executeTakeFirstOrThrow();
    expect(JSON.parse(stored.data).body).toContain(`(${IMAGE_URL})`);

    const pull = await octokit.rest.issues.get({ ...repo, issue_number: 6 });
    expect(pull.data).toMatchObject({ number: 6, id: 2006, pull_request: { merged_at: '2024-01-20T10:00:00Z' } });
    await expect404(octokit.rest.issues.get({ ...repo, issue_number: 99 }));
  });

  it('lists an issue\'s comments (oldest first, since) and every comment of the repository (sort, direction)', async () => {
    const comments = await octokit.rest.issues.listComments({ ...repo, issue_number: 1 });
    expect(comments.data).toHaveLength(2);
    expect(comments.data[1]).toEqual(onCopy(served(NOTES.find((note) => note.id === 5002)!), `${origin}/github`));
    expect(comments.data[0]!.body).toBe(`Same here: ![again](${origin}/github/attachments/${REPO}/${urlKey(IMAGE_URL)}/screen%20shot%20%231.png)`);
    expect(ids((await octokit.rest.issues.listComments({ ...repo, issue_number: 1, since: '2024-02-01T00:00:00Z' })).data)).toEqual([5002]);
    expect(ids((await octokit.rest.issues.listComments({ ...repo, issue_number: 6 })).data)).toEqual([5003]);
    expect((await octokit.rest.issues.listComments({ ...repo, issue_number: 2 })).data).toEqual([]);
    await expect404(octokit.rest.issues.listComments({ ...repo, issue_number: 99 }));

    expect(ids((await octokit.rest.issues.listCommentsForRepo(repo)).data)).toEqual([5001, 5002, 5004, 5003]);
    expect(ids((await octokit.rest.issues.listCommentsForRepo({ ...repo, sort: 'updated', direction: 'desc' })).data)).toEqual([5002, 5003, 5004, 5001]);
    expect(ids((await octokit.rest.issues.listCommentsForRepo({ ...repo, since: '2024-01-03T12:00:00Z' })).data)).toEqual([5002, 5004, 5003]);
  });

  it('lists events: the repository\'s newest first with the issue, an issue\'s oldest first without it', async () => {
    const all = await octokit.rest.issues.listEventsForRepo(repo);
    expect(ids(all.data)).toEqual([8003, 8002, 8001]);
    expect(all.data[0]!.issue).toMatchObject({ number: 1, title: 'Crash on start' });
    const own = await octokit.rest.issues.listEvents({ ...repo, issue_number: 1 });
    expect(ids(own.data)).toEqual([8001, 8003]);
    expect(own.data.every((event) => !('issue' in event))).toBe(true);
    const { issue: _issue, ...labeled } = served(EVENTS.find((event) => event.id === 8001)!);
    // GitHub sends performed_via_github_app on every event (null unless an app acted); the fixture's stored event lacks it.
    expect(own.data[0]).toEqual(onCopy({ ...labeled, performed_via_github_app: null }, `${origin}/github`));
  });

  it('lists and gets pull requests, with the counts and `merged` a single pull request has', async () => {
    expect(numbers((await octokit.rest.pulls.list(repo)).data)).toEqual([7]);
    expect(numbers((await octokit.rest.pulls.list({ ...repo, state: 'all' })).data)).toEqual([7, 6]);
    expect(numbers((await octokit.rest.pulls.list({ ...repo, state: 'all', sort: 'updated', direction: 'asc' })).data)).toEqual([6, 7]);
    expect(numbers((await octokit.rest.pulls.list({ ...repo, state: 'closed' })).data)).toEqual([6]);

    const merged = (await octokit.rest.pulls.get({ ...repo, pull_number: 6 })).data;
    expect(merged).toMatchObject({ number: 6, merged: true, comments: 1, review_comments: 2, merged_by: { login: 'octocat' }, head: { ref: expect.any(String) } });
    const open = (await octokit.rest.pulls.get({ ...repo, pull_number: 7 })).data;
    expect(open).toMatchObject({ number: 7, merged: false, comments: 0, review_comments: 0, merged_at: null });
    await expect404(octokit.rest.pulls.get({ ...repo, pull_number: 1 }));
  });

  it('lists reviews and review comments, per pull request and for the repository', async () => {
    expect(ids((await octokit.rest.pulls.listReviews({ ...repo, pull_number: 6 })).data)).toEqual([9001, 9002]);
    expect((await octokit.rest.pulls.listReviews({ ...repo, pull_number: 7 })).data).toEqual([]);
    await expect404(octokit.rest.pulls.listReviews({ ...repo, pull_number: 1 }));

    const comments = (await octokit.rest.pulls.listReviewComments({ ...repo, pull_number: 6 })).data;
    expect(ids(comments)).toEqual([7001, 7002]);
    expect(comments[0]!.body).toBe(`Nit 7001: see ![diagram](${origin}/github/attachments/${REPO}/${urlKey(IMAGE_URL)}/screen%20shot%20%231.png)`);
    expect(comments[1]!.path).toBe(DIFF_NOTES[1]!.path);

    expect(ids((await octokit.rest.pulls.listReviewCommentsForRepo(repo)).data)).toEqual([7001, 7002]);
    expect(ids((await octokit.rest.pulls.listReviewCommentsForRepo({ ...repo, sort: 'created', direction: 'desc' })).data)).toEqual([7002, 7001]);
    expect(ids((await octokit.rest.pulls.listReviewCommentsForRepo({ ...repo, since: '2024-01-09T00:00:00Z' })).data)).toEqual([7001]);
  });

  it('lists labels by name whatever the case, collaborators by id as a number, milestones by due date or completeness', async () => {
    const labels = (await octokit.rest.issues.listLabelsForRepo(repo)).data;
    expect(ids(labels)).toEqual([9, 100, 10]);
    expect(labels[2]).toEqual(onCopy(LABELS[1], `${origin}/github`));
    // octocat's id (583231) is smaller than hubot's (1000002), though not as text.
    expect((await octokit.rest.repos.listCollaborators(repo)).data.map((c) => c.login)).toEqual(['octocat', 'hubot']);
    expect((await octokit.rest.repos.listCollaborators(repo)).data[1]).toEqual(onCopy(COLLABORATORS[0], `${origin}/github`));

    const milestones = async (params: { state?: 'open' | 'closed' | 'all'; sort?: 'due_on' | 'completeness'; direction?: 'asc' | 'desc' }) =>
      numbers((await octokit.rest.issues.listMilestones({ ...repo, ...params })).data);
    expect(await milestones({})).toEqual([2, 1, 3]);
    expect(await milestones({ state: 'all' })).toEqual([4, 2, 1, 3]);
    expect(await milestones({ state: 'closed' })).toEqual([4]);
    expect(await milestones({ sort: 'completeness' })).toEqual([3, 1, 2]);
    expect(await milestones({ sort: 'completeness', direction: 'desc' })).toEqual([2, 1, 3]);
    const paged = await octokit.rest.issues.listMilestones({ ...repo, per_page: 2, page: 2 });
    expect(numbers(paged.data)).toEqual([3]);
    expect(paged.headers.link).toContain('rel="prev"');
  });

  it('lists releases newest first, their asset downloads pointing at the stored copies', async () => {
    const releases = (await octokit.rest.repos.listReleases(repo)).data;
    expect(releases.map((release) => release.tag_name)).toEqual(['v1.0.0', 'v0.9.0']);
    const asset = releases[0]!.assets[0]!;
    expect(asset.url.startsWith(`${origin}/github/repos/`)).toBe(true);
    expect(asset.browser_download_url).toBe(`${origin}/github/attachments/${REPO}/${urlKey(ASSET_URL)}/hello-1.0.0.tar.gz`);
    const download = await fetch(asset.browser_download_url, { headers: { authorization: `token ${READ}` } });
    expect(download.status).toBe(200);
    expect(download.headers.get('content-type')).toBe('application/gzip');
    expect(Buffer.from(await download.arrayBuffer())).toEqual(ASSET_BYTES);
  });

  it('gets the protection of a branch whose name has a slash, encoded (Octokit) or not', async () => {
    expect((await octokit.rest.repos.getBranchProtection({ ...repo, branch: PROTECTED_BRANCH })).data).toEqual(onCopy(PROTECTION, `${origin}/github`));
    const raw = await call(`/repos/${OWNER}/${REPO}/branches/${PROTECTED_BRANCH}/protection`);
    expect(raw.status).toBe(200);
    expect(await raw.json()).toEqual(onCopy(PROTECTION, `${origin}/github`));
    await expect404(octokit.rest.repos.getBranchProtection({ ...repo, branch: 'main' }));
    expect((await call(`/repos/${OWNER}/${REPO}/branches/${PROTECTED_BRANCH}`)).status).toBe(404);
  });

  it('gets users by login in any case from the host of the oldest import they appear in; 404 for others', async () => {
    expect((await octokit.rest.users.getByUsername({ username: 'OctoCat' })).data).toMatchObject({ login: 'octocat', id: 583231, type: 'User' });
    await expect404(octokit.rest.users.getByUsername({ username: 'deleted-user' }));
    await expect404(octokit.rest.users.getByUsername({ username: 'stranger' }));
    await expect404(octokit.rest.users.getByUsername({ username: 'nobody' }));
    // The GHE import is the oldest hubot appears in: its profile, not github.com's fetched later.
    expect((await octokit.rest.users.getByUsername({ username: 'hubot' })).data).toMatchObject({ login: 'hubot', id: 1001 });
    // github.com has a profile of ghe-only, but no github.com import names it.
    await expect404(octokit.rest.users.getByUsername({ username: 'ghe-only' }));
  });

  it('answers with GitHub\'s headers, a strong ETag and Last-Modified, 304 for If-None-Match or If-Modified-Since, and HEAD', async () => {
    const response = await call(`/repos/${OWNER}/${REPO}/labels`);
    expect(response.headers.get('content-type')).toBe('application/json; charset=utf-8');
    expect(response.headers.get('x-github-media-type')).toBe('github.v3; format=json');
    const etag = response.headers.get('etag');
    expect(etag).toMatch(/^"[0-9a-f]{64}"$/);
    // Labels have no updated_at; issues do: a list's Last-Modified is its latest item's.
    const issues = await call(`/repos/${OWNER}/${REPO}/issues?state=all`);
    const lastModified = issues.headers.get('last-modified');
    const latest = Math.max(...((await issues.json()) as { updated_at: string }[]).map((issue) => Date.parse(issue.updated_at)));
    expect(Date.parse(lastModified!)).toBe(Math.floor(latest / 1000) * 1000);
    const since = await call(`/repos/${OWNER}/${REPO}/issues?state=all`, { authorization: `Bearer ${READ}`, 'if-modified-since': lastModified! });
    expect(since.status).toBe(304);
    const before = await call(`/repos/${OWNER}/${REPO}/issues?state=all`, { authorization: `Bearer ${READ}`, 'if-modified-since': new Date(Date.parse(lastModified!) - 1000).toUTCString() });
    expect(before.status).toBe(200);
    // A parameter given twice counts once, with its last value (as PyGithub's reversed lists send them).
    const twice = await call(`/repos/${OWNER}/${REPO}/labels?per_page=5&per_page=1`);
    expect(twice.status).toBe(200);
    expect(((await twice.json()) as unknown[]).length).toBe(1);
    const trailing = await call(`/repos/${OWNER}/${REPO}/labels?per_page=1&page=2?per_page=1`);
    expect(((await trailing.json()) as { name: string }[]).map((label) => label.name)).toEqual([LABELS[2]!.name]);
    const again = await call(`/repos/${OWNER}/${REPO}/labels`, { authorization: `Bearer ${READ}`, 'if-none-match': etag! });
    expect(again.status).toBe(304);
    expect(await again.text()).toBe('');
    const other = await call(`/repos/${OWNER}/${REPO}/labels?per_page=1`, { authorization: `Bearer ${READ}`, 'if-none-match': etag! });
    expect(other.status).toBe(200);
    expect(other.headers.get('etag')).not.toBe(etag);
    const head = await call(`/repos/${OWNER}/${REPO}/labels`, { authorization: `Bearer ${READ}` }, 'HEAD');
    expect(head.status).toBe(200);
    expect(head.headers.get('etag')).toBe(etag);
    expect(await head.text()).toBe('');
  });

  it('errs in GitHub\'s shapes: 404 for what is not there, 422 for a bad query value', async () => {
    for (const [path, body] of [
      [`/repos/${OWNER}/${REPO}/issues/abc`, notFoundOf('issues/issues#get-an-issue')],
      [`/repos/${OWNER}/${REPO}/wiki`, NOT_FOUND],
      [`/repos/${OWNER}/nothing/labels`, notFoundOf('issues/labels#list-labels-for-a-repository')],
      ['/nothing', NOT_FOUND],
    ] as const) {
      const response = await call(path);
      expect(response.status, path).toBe(404);
      expect(response.headers.get('content-type')).toBe('application/json; charset=utf-8');
      expect(await response.json()).toEqual(body);
    }
    const bad = await call(`/repos/${OWNER}/${REPO}/issues?state=bogus&sort=comments`);
    expect(bad.status).toBe(422);
    expect(await bad.json()).toEqual({
      message: 'Validation Failed',
      errors: [{ resource: 'Issue', field: 'state', code: 'invalid' }],
      documentation_url: 'https://docs.github.com/rest/issues/issues#list-repository-issues',
      status: '422',
    });
    const fields = async (query: string) => ((await (await call(`/repos/${OWNER}/${REPO}/${query}`)).json()) as { errors: { field: string }[] }).errors.map((e) => e.field);
    expect(await fields('issues?since=yesterday&per_page=abc')).toEqual(['since']);
    expect(await fields('pulls?direction=sideways')).toEqual(['direction']);
    expect(await fields('milestones?sort=title')).toEqual(['sort']);
    expect(await fields(`issues?labels=${Array.from({ length: 101 }, (_, i) => `l${i}`).join(',')}`)).toEqual(['labels']);
    await expect(octokit.rest.pulls.list({ ...repo, state: 'merged' as 'open' })).rejects.toSatisfy((error: unknown) => error instanceof RequestError && error.status === 422);
  });

  it('needs a read or admin token, as `token …` or `Bearer …`: 401 in GitHub\'s shape otherwise', async () => {
    const path = `/repos/${OWNER}/${REPO}`;
    expect((await call(path, { authorization: `token ${READ}` })).status).toBe(200);
    expect((await call(path, { authorization: `Bearer ${ADMIN}` })).status).toBe(200);
    const missing = await call(path, {});
    expect(missing.status).toBe(401);
    expect(await missing.json()).toEqual({ message: 'Requires authentication', documentation_url: 'https://docs.github.com/rest', status: '401' });
    const wrong = await call(path, { authorization: `Bearer ${READ}x` });
    expect(wrong.status).toBe(401);
    expect(await wrong.json()).toEqual({ message: 'Bad credentials', documentation_url: 'https://docs.github.com/rest', status: '401' });
    const stranger = new Octokit({ baseUrl: `${origin}/github`, auth: 'ghp_notthetoken', log: silent });
    await expect(stranger.rest.repos.get(repo)).rejects.toSatisfy((error: unknown) => error instanceof RequestError && error.status === 401);
    expect((await call(`/attachments/${REPO}/${urlKey(IMAGE_URL)}/x.png`, {})).status).toBe(401);
  });

  it('shows a scoped reader the imports its scope names, and answers any other as GitHub answers an unknown repository', async () => {
    const path = `/repos/${OWNER}/${REPO}`;
    const attachment = `/attachments/${REPO}/${urlKey(IMAGE_URL)}/x.png`;
    expect((await call(path, { authorization: `Bearer ${INSIDE}` })).status).toBe(200);
    expect((await call(`${path}/issues`, { authorization: `token ${INSIDE}` })).status).toBe(200);
    expect((await call(attachment, { authorization: `Bearer ${INSIDE}` })).status).toBe(200);
    const unknown = await call(`/repos/${OWNER}/no-such-repo`, { authorization: `Bearer ${OUTSIDE}` });
    for (const [hidden, body] of [
      [path, notFoundOf('repos/repos#get-a-repository')],
      [`${path}/issues`, notFoundOf('issues/issues#list-repository-issues')],
      [`${path}/pulls/1`, notFoundOf('pulls/pulls#get-a-pull-request')],
      [attachment, NOT_FOUND],
    ] as const) {
      const answer = await call(hidden, { authorization: `Bearer ${OUTSIDE}` });
      expect(answer.status).toBe(404);
      expect(await answer.json()).toEqual(body);
    }
    expect(unknown.status).toBe(404);
  });

  it('serves a downloaded attachment with its bytes and type, safely; 404 for any other key', async () => {
    const { data } = await octokit.rest.issues.get({ ...repo, issue_number: 1 });
    const link = /!\[screenshot\]\(([^)]+)\)/.exec(data.body ?? '')![1]!;
    const image = await fetch(link, { headers: { authorization: `Bearer ${READ}` } });
    expect(image.status).toBe(200);
    expect(image.headers.get('content-type')).toBe('image/png');
    expect(image.headers.get('x-content-type-options')).toBe('nosniff');
    expect(image.headers.get('content-security-policy')).toBe("default-src 'none'; sandbox");
    expect(image.headers.get('content-disposition')).toBe(`inline; filename="screen shot #1.png"; filename*=UTF-8''screen%20shot%20%231.png`);
    expect(Buffer.from(await image.arrayBuffer())).toEqual(IMAGE_BYTES);

    const page = await call(`/attachments/${REPO}/${urlKey(PAGE_URL)}/report.html`);
    expect(page.headers.get('content-type')).toBe('text/html');
    expect(page.headers.get('content-security-policy')).toBe("default-src 'none'; sandbox");
    expect(Buffer.from(await page.arrayBuffer())).toEqual(PAGE_BYTES);

    for (const path of [
      `/attachments/${REPO}/${'0'.repeat(64)}/x.png`,
      `/attachments/${REPO}/not-a-key/x.png`,
      `/attachments/${REPO}/${urlKey(IMAGE_URL).toUpperCase()}/x.png`,
      `/attachments/${REPO}/${urlKey(PENDING_URL)}/x.png`,
      `/attachments/ghe-hello/${urlKey(IMAGE_URL)}/x.png`,
      `/attachments/${REPO}/..%2F..%2Fetc%2Fpasswd/x`,
    ]) {
      const response = await call(path);
      expect(response.status, path).toBe(404);
      expect(await response.json()).toEqual(NOT_FOUND);
    }
  });

  it('documents every route in the OpenAPI document, tagged github', async () => {
    const document = server.swagger() as { paths: Record<string, Record<string, { tags?: string[] }>> };
    const paths = Object.keys(document.paths).filter((path) => path.startsWith('/github/'));
    expect(paths).toEqual(
      expect.arrayContaining([
        '/github/repos/{owner}/{repo}',
        '/github/repos/{owner}/{repo}/issues',
        '/github/repos/{owner}/{repo}/issues/{issue_number}/comments',
        '/github/repos/{owner}/{repo}/pulls/{pull_number}',
        '/github/repos/{owner}/{repo}/branches/{branch}/protection',
        '/github/users/{username}',
        '/github/attachments/{name}/{url_key}/{filename}',
      ]),
    );
    expect(paths.filter((path) => path.includes('*'))).toEqual([]);
    expect(paths.length).toBeGreaterThanOrEqual(19);
    for (const path of paths) expect(document.paths[path]!.get?.tags, path).toEqual(['github']);
    const issues = document.paths['/github/repos/{owner}/{repo}/issues']!.get as unknown as { parameters: { name: string; in: string }[] };
    expect(issues.parameters.filter((p) => p.in === 'query').map((p) => p.name)).toEqual(expect.arrayContaining(['state', 'labels', 'since', 'sort', 'direction', 'per_page', 'page']));
  });
});

describe('GitHub-compatible API: inside forgesync\'s server', () => {
  it('answers in GitHub\'s shapes even under forgesync\'s own error handler, and keeps the Host check', async () => {
    const testDatabase = await createTestDatabase('sqlite');
    const database = await openDatabase(testDatabase.url);
    const filesDir = mkdtempSync(join(tmpdir(), 'forgesync-import-files-'));
    await seedProject(database, filesDir);
    // As buildServer sets the root up.
    const server = Fastify().withTypeProvider<ZodTypeProvider>();
    server.setValidatorCompiler(validatorCompiler);
    server.setSerializerCompiler(serializerCompiler);
    server.setErrorHandler(errorHandler(new ServerPaths([])));
    guardRequests(server as unknown as FastifyInstance, ['127.0.0.1']);
    await server.register(githubApiRoutes({ database, tokens: { admin: ADMIN, read: READ, failures: new AuthFailures() }, filesDir }), { prefix: '/github' });
    try {
      const get = (url: string, host = '127.0.0.1') => server.inject({ url, headers: { host, authorization: `token ${READ}` } });
      const bad = await get(`/github/repos/${OWNER}/${REPO}/pulls?state=merged`);
      expect(bad.statusCode).toBe(422);
      expect(bad.json()).toMatchObject({ message: 'Validation Failed', errors: [{ resource: 'PullRequest', field: 'state', code: 'invalid' }] });
      expect((await get(`/github/repos/${OWNER}/${REPO}/pulls/x`)).json()).toEqual(notFoundOf('pulls/pulls#get-a-pull-request'));
      const issues = await get(`/github/repos/${OWNER}/${REPO}/issues?per_page=1`);
      expect(issues.json()).toHaveLength(1);
      expect(issues.headers.link).toContain(`<http://127.0.0.1/github/repos/${OWNER}/${REPO}/issues?per_page=1&page=2>; rel="next"`);
      expect((await get(`/github/repos/${OWNER}/${REPO}`, 'evil.example')).statusCode).toBe(421);
    } finally {
      await server.close();
      await database.close();
    }
  });
});

describe('GitHub-compatible API: failed authentication', () => {
  it('counts toward the server\'s throttle: past the limit, 429 in GitHub\'s shape for wrong tokens, never for the right ones', async () => {
    const testDatabase = await createTestDatabase('sqlite');
    const database = await openDatabase(testDatabase.url);
    const filesDir = mkdtempSync(join(tmpdir(), 'forgesync-import-files-'));
    const { server, origin } = await startApi(database, filesDir, { admin: ADMIN, read: READ, failures: new AuthFailures({ limit: 2 }) });
    try {
      const get = (token: string) => fetch(`${origin}/github/users/octocat`, { headers: { authorization: `token ${token}` } });
      expect((await get(READ)).status).toBe(404);
      expect((await get('wrong')).status).toBe(401);
      expect((await get('wrong')).status).toBe(401);
      const throttled = await get('wrong-again');
      expect(throttled.status).toBe(429);
      expect(Number(throttled.headers.get('retry-after'))).toBeGreaterThan(0);
      expect(await throttled.json()).toMatchObject({ message: expect.stringContaining('try again'), documentation_url: 'https://docs.github.com/rest', status: '429' });
      // Others' failures never lock a valid token out.
      expect((await get(READ)).status).toBe(404);
      expect((await get(ADMIN)).status).toBe(404);
    } finally {
      await server.close();
      await database.close();
    }
  });
});

/** A one-issue project whose issue is by `alice`, her profile named `aliceName`. */
function projectWithAlice(owner: string, name: string, aliceName: string): FakeProject {
  const project = new FakeProject({ owner, name, hasWiki: false, repoId: name.length * 1000 });
  project.createUser('alice', { name: aliceName });
  project.addCommit({ message: 'Initial commit', author: 'alice', files: [{ path: 'README.md', content: `# ${name}\n` }] });
  project.branches.push({ name: 'main', commit: 'main', protection: null });
  project.createIssue({ title: `Hello from ${owner}`, user: 'alice' });
  return project;
}

describe('GitHub-compatible API: imports from two API hosts', () => {
  it('serves each import its own host\'s data, and a profile from the oldest import\'s host however recently another host answered', async () => {
    const tokens = [testSecret('FIRST_HOST_TOKEN'), testSecret('SECOND_HOST_TOKEN')];
    const first = await startFakeGitHub({ project: projectWithAlice('acme-org', 'widgets', 'Alice Liddell'), tokens: [tokens[0]!] });
    // The second host, added later, says alice is someone else.
    const second = await startFakeGitHub({ project: projectWithAlice('other-org', 'gadgets', 'Mallory'), tokens: [tokens[1]!] });
    const secrets = join(mkdtempSync(join(tmpdir(), 'forgesync-secrets-')), 'secrets.json');
    const bound = (fake: typeof first, token: string) => ({ token, hosts: [new URL(fake.apiUrl).host, new URL(fake.webUrl).host] });
    writeFileSync(secrets, JSON.stringify({ FIRST: bound(first, tokens[0]!), SECOND: bound(second, tokens[1]!) }), { mode: 0o600 });
    const testDatabase = await createTestDatabase('sqlite');
    const { app } = await openTestForgesync(testConfig(testDatabase.url, { FORGESYNC_SECRETS_FILE: secrets, FORGESYNC_IMPORT_RETRY_BASE: '20ms' }));
    let server: ForgesyncServer | undefined;
    try {
      for (const [fake, credential] of [[first, 'FIRST'], [second, 'SECOND']] as const) {
        const { repo } = fake.project;
        const record = await app.importer.create({ project: `${repo.owner}/${repo.name}`, apiUrl: fake.apiUrl, credentials: [credential] });
        expect((await app.importer.runHere(record.name)).outcome).toBe('synced');
      }
      // Behind a proxy at a path: every API link of both hosts points below FORGESYNC_PUBLIC_URL.
      const copy = 'https://copy.example/forgesync/github';
      server = await buildServer(app, { tokens: { admin: ADMIN, read: READ }, publicUrl: 'https://copy.example/forgesync' });
      const get = async (url: string) => {
        const response = await server!.inject({ url: `/github${url}`, headers: { authorization: `token ${READ}` } });
        expect(response.statusCode, url).toBe(200);
        return response.json();
      };
      expect(await get('/users/alice')).toMatchObject({ login: 'alice', name: 'Alice Liddell', url: `${copy}/users/alice` });
      for (const fake of [first, second]) {
        const { owner, name } = fake.project.repo;
        expect(await get(`/repos/${owner}/${name}`)).toMatchObject({ full_name: `${owner}/${name}`, url: `${copy}/repos/${owner}/${name}` });
        const issue = await get(`/repos/${owner}/${name}/issues/1`);
        // Link headers too: past the only page, `prev` and `first` are below the public URL.
        const past = await server!.inject({ url: `/github/repos/${owner}/${name}/issues?per_page=1&page=2`, headers: { authorization: `token ${READ}` } });
        expect(past.headers.link).toBe(`<${copy}/repos/${owner}/${name}/issues?per_page=1&page=1>; rel="prev", <${copy}/repos/${owner}/${name}/issues?per_page=1&page=1>; rel="first"`);
        expect(issue).toMatchObject({ title: `Hello from ${owner}`, user: { login: 'alice', url: `${copy}/users/alice` }, html_url: expect.stringContaining(`${fake.webUrl}/`) });
      }
    } finally {
      await server?.close();
      await app.close();
      await first.close();
      await second.close();
      await testDatabase.drop();
    }
  }, 60_000);
});
