import { mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import Fastify, { type FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { githubApiRoutes } from '../../src/importer/http/github-api/index.js';
import { keysetConnection, type KeysetSource } from '../../src/importer/http/github-api/graphql/connection.js';
import type { StoredRow } from '../../src/importer/store/graphql-reads.js';
import { AuthFailures } from '../../src/server/auth.js';
import { parseReaders } from '../../src/credentials/readers.js';
import { openDatabase, type Database } from '../../src/store/database.js';
import { createTestDatabase, type TestDatabase } from '../support/harness.js';
import { testSecret } from '../support/secrets.js';
import { OWNER, REPO, seedProject } from './support/github-api-fixtures.js';

/*
 * The GitHub-compatible GraphQL endpoint over a seeded import: the queries
 * gh 2.23 sends (captured in fixtures/gh-queries), GitHub's answers for
 * them, its limits and its error shapes.
 */

const READ = testSecret('GRAPHQL_READ_TOKEN');
const OUTSIDE = testSecret('GRAPHQL_OUTSIDE_READER');
const QUERIES = fileURLToPath(new URL('./fixtures/gh-queries/', import.meta.url));

type Answer = { status: number; body: any };

/** A captured query file: its query and its variables, with the capture's `acme/widgets` made the seeded repository. */
function captured(file: string): { query: string; variables: Record<string, unknown> } {
  const text = readFileSync(join(QUERIES, file), 'utf8');
  const line = /^# variables: (.*)$/m.exec(text)?.[1] ?? '{}';
  const variables = JSON.parse(line.replaceAll('acme/widgets', `${OWNER}/${REPO}`)) as Record<string, unknown>;
  for (const key of ['owner']) if (key in variables) variables[key] = OWNER;
  for (const key of ['repo', 'name']) if (key in variables) variables[key] = REPO;
  // The capture's numbers: the seeded project's pull request is 6, its issue with comments 1.
  if ('pr_number' in variables) variables.pr_number = 6;
  if ('number' in variables && file.startsWith('issue-view')) variables.number = 1;
  // gh's comment preload names the issue by the id its first query answered.
  if (variables.id === 'x') variables.id = 'I_kwDO1001';
  return { query: text, variables };
}

describe.each(['sqlite', 'postgres'] as const)('GitHub-compatible GraphQL on %s', (kind) => {
  let testDatabase: TestDatabase;
  let database: Database;
  let server: FastifyInstance;
  let origin: string;

  const post = async (body: unknown, options: { token?: string; path?: string; raw?: string } = {}): Promise<Answer> => {
    const response = await fetch(`${origin}/github${options.path ?? '/api/graphql'}`, {
      method: 'POST',
      headers: { authorization: `bearer ${options.token ?? READ}`, 'content-type': 'application/json' },
      body: options.raw ?? JSON.stringify(body),
    });
    const text = await response.text();
    return { status: response.status, body: text === '' ? undefined : (JSON.parse(text) as unknown) };
  };
  const query = (text: string, variables: Record<string, unknown> = {}, options: { token?: string; path?: string } = {}) => post({ query: text, variables }, options);

  beforeAll(async () => {
    testDatabase = await createTestDatabase(kind);
    database = await openDatabase(testDatabase.url);
    const filesDir = mkdtempSync(join(tmpdir(), 'forgesync-graphql-files-'));
    await seedProject(database, filesDir);
    const readers = parseReaders({ outside: { token: OUTSIDE, scope: ['team-b/*'] } });
    server = Fastify();
    await server.register(githubApiRoutes({ database, tokens: { admin: testSecret('GRAPHQL_ADMIN'), read: READ, readers: async () => readers, failures: new AuthFailures() }, filesDir }), { prefix: '/github' });
    await server.listen({ port: 0, host: '127.0.0.1' });
    const address = server.server.address();
    if (!address || typeof address !== 'object') throw new Error('not listening');
    origin = `http://127.0.0.1:${address.port}`;
  });

  afterAll(async () => {
    await server?.close();
    await database?.close();
    await testDatabase?.drop();
  });

  it('answers every query gh 2.23 sends (the captured ones) without an error', async () => {
    const files = readdirSync(QUERIES).filter((file) => file.endsWith('.graphql'));
    expect(files.length).toBeGreaterThan(10);
    const failures: Record<string, unknown> = {};
    for (const file of files) {
      const { query: text, variables } = captured(file);
      const answer = await post({ query: text, variables });
      if (answer.status !== 200 || answer.body?.errors || !answer.body?.data) failures[file] = answer.body?.errors?.map((error: { message: string }) => error.message) ?? answer.body;
    }
    expect(failures).toEqual({});
  });

  const ISSUES = `query($states: [IssueState!], $after: String, $first: Int) { repository(owner: "${OWNER}", name: "${REPO}") {
    issues(first: $first, after: $after, states: $states, orderBy: {field: CREATED_AT, direction: DESC}) {
      totalCount nodes { number state author { __typename login ...on User { id } } labels(first: 10) { nodes { name color } totalCount } url }
      pageInfo { hasNextPage endCursor } } } }`;

  it('lists issues newest first with GitHub\'s field values, a keyset page at a time', async () => {
    const all = await query(ISSUES, { states: ['OPEN', 'CLOSED'], first: 100 });
    const issues = all.body.data.repository.issues;
    expect(issues.nodes.map((issue: { number: number }) => issue.number)).toEqual([5, 4, 3, 2, 1]);
    expect(issues.totalCount).toBe(5);
    expect(issues.nodes[4]).toEqual({
      number: 1,
      state: 'OPEN',
      author: { __typename: 'User', login: 'octocat', id: expect.any(String) },
      labels: { nodes: [{ name: 'bug', color: 'd73a4a' }], totalCount: 1 },
      url: `https://github.com/${OWNER}/${REPO}/issues/1`,
    });
    const first = (await query(ISSUES, { states: ['OPEN'], first: 2 })).body.data.repository.issues;
    expect(first.nodes.map((issue: { number: number }) => issue.number)).toEqual([5, 4]);
    expect(first.pageInfo.hasNextPage).toBe(true);
    const second = (await query(ISSUES, { states: ['OPEN'], first: 2, after: first.pageInfo.endCursor })).body.data.repository.issues;
    expect(second.nodes.map((issue: { number: number }) => issue.number)).toEqual([2, 1]);
    expect(second.pageInfo.hasNextPage).toBe(false);
    const bad = await query(ISSUES, { states: ['OPEN'], first: 2, after: 'bm90IG91cnM=' });
    expect(bad.body.errors[0]).toMatchObject({ type: 'INVALID_CURSOR_ARGUMENTS', message: '`bm90IG91cnM=` does not appear to be a valid cursor.' });
  });

  it('filters issues as gh\'s IssueList asks (author, assignee, mentions, milestone number) and pages backwards', async () => {
    const list = async (filterBy: Record<string, unknown>, paging = 'first: 100') => {
      const answer = await query(`query($filterBy: IssueFilters) { repository(owner: "${OWNER}", name: "${REPO}") {
        issues(${paging}, states: [OPEN, CLOSED], orderBy: {field: CREATED_AT, direction: DESC}, filterBy: $filterBy) { totalCount nodes { number } pageInfo { hasPreviousPage startCursor } } } }`, { filterBy });
      return answer.body.data.repository.issues;
    };
    expect((await list({ createdBy: 'HUBOT' })).nodes).toEqual([{ number: 4 }, { number: 2 }]);
    expect((await list({ createdBy: 'hubot' })).totalCount).toBe(2);
    expect((await list({ assignee: 'nobody-at-all' })).totalCount).toBe(0);
    expect((await list({ milestoneNumber: 'none' })).totalCount).toBe(5);
    expect((await list({ milestoneNumber: '1' })).totalCount).toBe(0);
    const last = await list({}, 'last: 2');
    expect(last.nodes).toEqual([{ number: 2 }, { number: 1 }]);
    expect(last.pageInfo.hasPreviousPage).toBe(true);
    const before = await list({}, `last: 2, before: "${last.pageInfo.startCursor}"`);
    expect(before.nodes).toEqual([{ number: 4 }, { number: 3 }]);
  });

  it('lists pull requests by base and head branch, and answers numbers of either kind', async () => {
    const pulls = async (args: string) =>
      (await query(`{ repository(owner: "${OWNER}", name: "${REPO}") { pullRequests(first: 10, ${args}) { nodes { number baseRefName headRefName } } } }`)).body.data.repository.pullRequests.nodes;
    const [pull] = await pulls('states: [OPEN, CLOSED, MERGED], orderBy: {field: CREATED_AT, direction: DESC}');
    expect(pull.number).toBe(7);
    expect(await pulls(`baseRefName: "${pull.baseRefName}", headRefName: "${pull.headRefName}", states: OPEN`)).toEqual([pull]);
    expect(await pulls('baseRefName: "no-such-branch"')).toEqual([]);
    const either = await query(`{ repository(owner: "${OWNER}", name: "${REPO}") { a: issueOrPullRequest(number: 1) { __typename } b: issueOrPullRequest(number: 6) { __typename ...on PullRequest { merged mergedBy { login } } } } }`);
    expect(either.body.data.repository).toEqual({ a: { __typename: 'Issue' }, b: { __typename: 'PullRequest', merged: true, mergedBy: { login: 'octocat' } } });
    const wrongKind = await query(`{ repository(owner: "${OWNER}", name: "${REPO}") { issue(number: 6) { number } } }`);
    expect(wrongKind.body).toMatchObject({ data: { repository: { issue: null } }, errors: [{ type: 'NOT_FOUND', path: ['repository', 'issue'], message: 'Could not resolve to an Issue with the number of 6.' }] });
  });

  it('finds nodes by GitHub\'s ids, legacy and current, only in imports the reader sees', async () => {
    const legacy = Buffer.from('05:Issue1001').toString('base64');
    const answer = await query(`query($ids: [ID!]!) { nodes(ids: $ids) { __typename ...on Label { name } ...on Milestone { title } } }`, { ids: ['LA_9', 'MI_kwDO301', 'unknown'] });
    expect(answer.body.data.nodes).toEqual([{ __typename: 'Label', name: 'bug' }, { __typename: 'Milestone', title: 'v1.0' }, null]);
    // Ids that do not decode are looked for by a scan of the stored JSON, a few per request only.
    const scanned = await query(`query($ids: [ID!]!) { nodes(ids: $ids) { id } }`, { ids: Array.from({ length: 7 }, () => 'LA_9') });
    expect(scanned.body.data.nodes.map((node: unknown) => node !== null)).toEqual([true, true, true, true, true, false, false]);
    expect((await query(`{ node(id: "${legacy}") { ...on Issue { number } } }`)).body.data.node).toEqual({ number: 1 });
    const missing = await query(`{ node(id: "I_nothing") { id } }`);
    expect(missing.body.errors[0]).toMatchObject({ type: 'NOT_FOUND', path: ['node'] });
    const hidden = await query(`{ node(id: "I_kwDO1001") { id } }`, {}, { token: OUTSIDE });
    expect(hidden.body).toMatchObject({ data: { node: null }, errors: [{ type: 'NOT_FOUND' }] });
  });

  it('searches issues and pull requests with the qualifiers gh builds', async () => {
    const search = async (q: string) => {
      const answer = await query(`query($q: String!) { search(type: ISSUE, query: $q, last: 30) { issueCount nodes { __typename ...on Issue { number } ...on PullRequest { number state } } } }`, { q });
      return answer.body.data.search;
    };
    const repo = `repo:${OWNER}/${REPO}`;
    expect((await search(`label:bug ${repo} type:issue`)).nodes.map((n: { number: number }) => n.number)).toEqual([4, 3, 1]);
    expect((await search(`label:bug ${repo} state:open type:issue`)).issueCount).toBe(2);
    expect((await search(`crash in:title ${repo} type:issue`)).nodes).toEqual([{ __typename: 'Issue', number: 1 }]);
    expect((await search(`${repo} is:pr is:merged`)).nodes).toEqual([{ __typename: 'PullRequest', number: 6, state: 'MERGED' }]);
    expect((await search(`${repo} is:pr is:unmerged`)).issueCount).toBe(0);
    expect((await search(`${repo} is:pr -is:merged`)).nodes).toEqual([{ __typename: 'PullRequest', number: 7, state: 'OPEN' }]);
    expect((await search(`${repo} author:hubot type:issue sort:created-asc`)).nodes.map((n: { number: number }) => n.number)).toEqual([2, 4]);
    expect((await search('label:bug type:issue')).issueCount).toBe(0);
  });

  it('answers pull requests with their state, branches, reviews and comments', async () => {
    const list = await query(`{ repository(owner: "${OWNER}", name: "${REPO}") { pullRequests(first: 10, states: [MERGED]) { totalCount nodes { number state isDraft baseRefName headRefName } } } }`);
    expect(list.body.data.repository.pullRequests).toMatchObject({ totalCount: 1, nodes: [{ number: 6, state: 'MERGED', isDraft: false }] });
    const numbersOf = async (states: string) =>
      (await query(`{ repository(owner: "${OWNER}", name: "${REPO}") { pullRequests(first: 10, states: ${states}) { totalCount nodes { number } } } }`)).body.data.repository.pullRequests;
    expect(await numbersOf('[CLOSED]')).toEqual({ totalCount: 0, nodes: [] });
    expect(await numbersOf('[OPEN, CLOSED]')).toEqual({ totalCount: 1, nodes: [{ number: 7 }] });
    expect(await numbersOf('[OPEN, MERGED]')).toEqual({ totalCount: 2, nodes: [{ number: 6 }, { number: 7 }] });
    const view = await query(`{ repository(owner: "${OWNER}", name: "${REPO}") { pullRequest(number: 6) {
      reviews(first: 100) { totalCount nodes { state author { login } submittedAt } } reviewDecision comments(first: 100) { totalCount nodes { body } }
      reactionGroups { content users { totalCount } } } } }`);
    const pull = view.body.data.repository.pullRequest;
    expect(pull.reviews.nodes.map((r: { state: string }) => r.state)).toEqual(['COMMENTED', 'APPROVED']);
    expect(pull.reviewDecision).toBe('APPROVED');
    expect(pull.comments).toEqual({ totalCount: 1, nodes: [{ body: 'LGTM once CI passes.' }] });
    expect(pull.reactionGroups).toHaveLength(8);
  });

  it('answers an issue with its comments (attachments pointed at the copy) and by its global id', async () => {
    const answer = await query(`{ repository(owner: "${OWNER}", name: "${REPO}") { issue(number: 1) { id body comments(first: 1) { totalCount nodes { body } pageInfo { hasNextPage } } } } }`);
    const issue = answer.body.data.repository.issue;
    expect(issue.comments.totalCount).toBe(2);
    expect(issue.comments.pageInfo.hasNextPage).toBe(true);
    expect(issue.body).toContain(`${origin}/github/attachments/`);
    const node = await query(`query($id: ID!) { node(id: $id) { __typename ...on Issue { number } } }`, { id: issue.id }, { path: '/graphql' });
    expect(node.body.data.node).toEqual({ __typename: 'Issue', number: 1 });
  });

  it('lists labels, releases and milestones as gh asks for them', async () => {
    const answer = await query(`{ repository(owner: "${OWNER}", name: "${REPO}") {
      labels(first: 10, orderBy: {field: NAME, direction: ASC}) { nodes { name } }
      releases(first: 10, orderBy: {field: CREATED_AT, direction: DESC}) { nodes { tagName isLatest isDraft } }
      latestRelease { tagName releaseAssets(first: 5) { nodes { name } } }
      milestone(number: 2) { title state dueOn } } }`);
    const repository = answer.body.data.repository;
    expect(repository.labels.nodes.map((l: { name: string }) => l.name)).toEqual(['bug', 'enhancement', 'Help Wanted']);
    expect(repository.releases.nodes).toEqual([{ tagName: 'v1.0.0', isLatest: true, isDraft: false }, { tagName: 'v0.9.0', isLatest: false, isDraft: false }]);
    expect(repository.latestRelease).toEqual({ tagName: 'v1.0.0', releaseAssets: { nodes: [{ name: 'hello-1.0.0.tar.gz' }] } });
    expect(repository.milestone).toEqual({ title: 'v0.9', state: 'OPEN', dueOn: '2024-03-01T08:00:00Z' });
  });

  it('enforces GitHub\'s limits: page sizes, paging boundaries, node count, depth', async () => {
    const repo = `repository(owner: "${OWNER}", name: "${REPO}")`;
    const tooMany = await query(`{ ${repo} { issues(first: 101) { nodes { number } } } }`);
    expect(tooMany.status).toBe(200);
    expect(tooMany.body.errors[0]).toMatchObject({ type: 'EXCESSIVE_PAGINATION', message: 'Requesting 101 records on the `issues` connection exceeds the `first` limit of 100 records.' });
    expect(tooMany.body.data).toBeUndefined();
    const unbounded = await query(`{ ${repo} { issues { nodes { number } } } }`);
    expect(unbounded.body.errors[0]).toMatchObject({ type: 'MISSING_PAGINATION_BOUNDARIES' });
    expect((await query(`{ ${repo} { issues(states: OPEN) { totalCount } } }`)).body.data.repository.issues.totalCount).toBe(4);
    const huge = await query(`{ ${repo} { issues(first: 100) { nodes { comments(first: 100) { nodes { reactionGroups { users(first: 100) { nodes { login } } } } } } } } }`);
    expect(huge.body.errors[0]).toMatchObject({ type: 'MAX_NODE_LIMIT_EXCEEDED' });
    expect(huge.body.errors[0].message).toContain('1,010,100 possible nodes which exceeds the maximum limit of 500,000');
    const deep = `{ ${repo} { ${'parent { '.repeat(30)}name${' }'.repeat(30)} } }`;
    expect((await query(deep)).body.errors[0]).toMatchObject({ type: 'MAX_DEPTH_EXCEEDED' });
  });

  it('answers errors in GitHub\'s shapes, never a 500', async () => {
    const unknownField = await query(`{ repository(owner: "${OWNER}", name: "${REPO}") { bogus } }`);
    expect(unknownField.status).toBe(200);
    expect(unknownField.body.errors[0]).toMatchObject({ path: ['query', 'repository', 'bogus'], message: "Field 'bogus' doesn't exist on type 'Repository'", extensions: { code: 'undefinedField', typeName: 'Repository', fieldName: 'bogus' } });
    const inFragment = await query(`query Named { repository(owner: "a", name: "b") { ...repo } } fragment repo on Repository { issues(first: 1) { nodes { ... on Issue { nope } } } }`);
    expect(inFragment.body.errors[0].path).toEqual(['fragment repo', 'issues', 'nodes', '... on Issue', 'nope']);
    const missing = await query(`{ repository(owner: "nobody", name: "nothing") { name } }`);
    expect(missing.body).toEqual({ data: { repository: null }, errors: [{ type: 'NOT_FOUND', path: ['repository'], locations: [{ line: 1, column: 3 }], message: "Could not resolve to a Repository with the name 'nobody/nothing'." }] });
    const hidden = await query(`{ repository(owner: "${OWNER}", name: "${REPO}") { name } }`, {}, { token: OUTSIDE });
    expect(hidden.body.errors[0].message).toBe(`Could not resolve to a Repository with the name '${OWNER}/${REPO}'.`);
    const badJson = await post(undefined, { raw: '{"query": ' });
    expect(badJson).toEqual({ status: 400, body: { message: 'Problems parsing JSON', documentation_url: 'https://docs.github.com/graphql' } });
    const syntax = await query('{ repository(owner: "a" { name } }');
    expect(syntax.status).toBe(200);
    expect(syntax.body.errors[0].message).toMatch(/^Parse error on /);
    expect((await post({ variables: {} })).body.errors[0].message).toBe('A query attribute must be specified and must be a string.');
    const manyTokens = await query(`{ ${'viewer { login } '.repeat(6000)} }`);
    expect(manyTokens).toEqual({ status: 200, body: { errors: [{ message: 'Query is too large: it has more than 20,000 tokens; ask for less at once.' }] } });
    const hugeBody = await post({ query: `{ viewer { login } } #${'x'.repeat(300_000)}` });
    expect(hugeBody.status).toBe(413);
    expect(hugeBody.body.message).toMatch(/too large/i);
    const unauthenticated = await fetch(`${origin}/github/graphql`, { method: 'POST', body: '{"query":"{ viewer { login } }"}' });
    expect(unauthenticated.status).toBe(401);
    expect((await query('{ viewer { login } }')).body.data.viewer.login).toBe('forgesync-reader');
  });
});

describe('keyset connections', () => {
  /** Rows 1..n in id order, read as the store reads them (strictly between the bounds, from either end). */
  const rows = (n: number): KeysetSource<number> => {
    const all: StoredRow[] = Array.from({ length: n }, (_, index) => ({ type: 'issue', key: String(index + 1), number: index + 1, data: '{}', position: { value: null, key: index + 1 } }));
    return {
      read: async ({ after, before, fromEnd, limit }) => {
        const between = all.filter((row) => (!after || row.position.key > after.key) && (!before || row.position.key < before.key));
        return (fromEnd ? between.reverse() : between).slice(0, limit);
      },
      nodes: async (page) => page.map((row) => row.position.key),
      count: async () => n,
    };
  };

  it('stops at the cap reading forwards (a search reaches 1,000 results), whatever the page size', async () => {
    const first = await keysetConnection(rows(5), { first: 2 }, { cap: 3 });
    expect(first.nodes()).toEqual([1, 2]);
    expect(first.pageInfo().hasNextPage).toBe(true);
    const second = await keysetConnection(rows(5), { first: 2, after: first.pageInfo().endCursor }, { cap: 3 });
    expect(second.nodes()).toEqual([3]);
    expect(second.pageInfo().hasNextPage).toBe(false);
    const past = await keysetConnection(rows(5), { first: 2, after: second.pageInfo().endCursor }, { cap: 3 });
    expect(past.nodes()).toEqual([]);
    expect(await past.totalCount()).toBe(5);
  });

  it('reads JSON-filtered rows a batch at a time until the page is full', async () => {
    const even = { ...rows(1200), keep: async (batch: StoredRow[]) => batch.filter((row) => row.position.key % 2 === 0) };
    const page = await keysetConnection(even, { first: 3, after: undefined });
    expect(page.nodes()).toEqual([2, 4, 6]);
    const late = await keysetConnection(even, { last: 2 });
    expect(late.nodes()).toEqual([1198, 1200]);
    expect(late.pageInfo().hasPreviousPage).toBe(true);
  });
});
