import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Fastify, { type FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { githubApiRoutes } from '../../src/importer/http/github-api/index.js';
import { AuthFailures } from '../../src/server/auth.js';
import { parseReaders } from '../../src/credentials/readers.js';
import { openDatabase, type Database } from '../../src/store/database.js';
import { listColumns } from '../../src/store/import-list-columns.js';
import { createTestDatabase, type TestDatabase } from '../support/harness.js';
import { testSecret } from '../support/secrets.js';
import { OWNER, REPO, seedProject, type Seeded } from './support/github-api-fixtures.js';

/*
 * What the GraphQL endpoint remembers between requests (graphql/answers.ts:
 * whole answers; ImportScope.total: connection counts) is answered only
 * while nothing it read has changed: a write of the import (a new
 * `import_progress` row, as every committed batch of an import appends)
 * makes the next request read anew, and a scoped reader never gets what a
 * reader of every import was answered.
 */

const READ = testSecret('GRAPHQL_ANSWERS_READ');
const OUTSIDE = testSecret('GRAPHQL_ANSWERS_OUTSIDE');

const ISSUES = `query Issues($owner: String!, $repo: String!) {
  repository(owner: $owner, name: $repo) {
    issues(first: 100, states: [OPEN, CLOSED], orderBy: {field: CREATED_AT, direction: DESC}) { totalCount nodes { number title } }
  }
}`;

describe.each(['sqlite', 'postgres'] as const)('remembered GraphQL answers on %s', (kind) => {
  let testDatabase: TestDatabase;
  let database: Database;
  let server: FastifyInstance;
  let origin: string;
  let seeded: Seeded;

  const post = async (token: string, query: string, variables: Record<string, unknown>) => {
    const response = await fetch(`${origin}/github/graphql`, { method: 'POST', headers: { authorization: `bearer ${token}`, 'content-type': 'application/json' }, body: JSON.stringify({ query, variables }) });
    expect(response.status).toBe(200);
    return (await response.json()) as { data: any; errors?: { type?: string; message: string }[] };
  };

  /** Stores a copy of one stored issue as issue `number` (a new one, created last), and then a write stamp, as an import's batch does. */
  const storeIssue = async (number: number, title: string) => {
    const template = await database.db.selectFrom('import_objects').select('data').where('import_id', '=', seeded.mainId).where('type', '=', 'issue').executeTakeFirstOrThrow();
    const data = { ...(JSON.parse(template.data) as Record<string, unknown>), id: 990_000 + number, number, title, state: 'open', created_at: '2030-01-01T00:00:00Z', updated_at: '2030-01-01T00:00:00Z' };
    const key = String(data.id);
    await database.db
      .insertInto('import_objects')
      .values({ import_id: seeded.mainId, type: 'issue', key, run: 1, data: JSON.stringify(data), number, parent: null, state: 'open', created_at: data.created_at, updated_at: data.updated_at, labels: null, comments: 0, ...listColumns('issue', key, data) })
      .execute();
    await database.db.insertInto('import_progress').values({ import_id: seeded.mainId, at: Date.now(), requests_total: 0, requests_counted: 0, requests_not_modified: 0, requests_retried: 0, rate_limit_waits: 0, rate_limit_wait_ms: 0, rate: null }).execute();
  };

  beforeAll(async () => {
    testDatabase = await createTestDatabase(kind);
    database = await openDatabase(testDatabase.url);
    seeded = await seedProject(database, mkdtempSync(join(tmpdir(), 'forgesync-graphql-answers-')));
    const readers = parseReaders({ outside: { token: OUTSIDE, scope: ['team-b/*'] } });
    server = Fastify();
    await server.register(githubApiRoutes({ database, tokens: { admin: testSecret('GRAPHQL_ANSWERS_ADMIN'), read: READ, readers: async () => readers, failures: new AuthFailures() }, filesDir: mkdtempSync(join(tmpdir(), 'forgesync-graphql-answers-files-')) }), { prefix: '/github' });
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

  it('answers a repeated query alike, and anew once the import has written', async () => {
    const first = await post(READ, ISSUES, { owner: OWNER, repo: REPO });
    expect(first.errors).toBeUndefined();
    const before = first.data.repository.issues;
    expect(before.totalCount).toBeGreaterThan(0);
    expect(await post(READ, ISSUES, { owner: OWNER, repo: REPO })).toEqual(first);

    await storeIssue(9001, 'Written after the first answer');
    const after = (await post(READ, ISSUES, { owner: OWNER, repo: REPO })).data.repository.issues;
    expect(after.totalCount).toBe(before.totalCount + 1);
    expect(after.nodes[0]).toEqual({ number: 9001, title: 'Written after the first answer' });
  });

  it('counts a search anew once the import has written', async () => {
    const search = `query($q: String!) { search(type: ISSUE, query: $q, first: 5) { issueCount } }`;
    const q = `repo:${OWNER}/${REPO} is:issue is:open`;
    const before = (await post(READ, search, { q })).data.search.issueCount;
    await storeIssue(9002, 'Another one');
    expect((await post(READ, search, { q })).data.search.issueCount).toBe(before + 1);
  });

  it('never answers a scoped reader with what a reader of every import was answered', async () => {
    expect((await post(READ, ISSUES, { owner: OWNER, repo: REPO })).data.repository).not.toBeNull();
    const scoped = await post(OUTSIDE, ISSUES, { owner: OWNER, repo: REPO });
    expect(scoped.errors?.[0]?.type).toBe('NOT_FOUND');
  });
});
