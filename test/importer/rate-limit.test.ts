import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Octokit } from '@octokit/rest';
import Fastify, { type FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { githubApiRoutes } from '../../src/importer/http/github-api/index.js';
import { AuthFailures } from '../../src/server/auth.js';
import { openDatabase, type Database } from '../../src/store/database.js';
import { createTestDatabase } from '../support/harness.js';
import { testSecret } from '../support/secrets.js';

/*
 * The copy's rate limits as GitHub's clients read them: `GET /rate_limit`
 * (Octokit's rateLimit.get, PyGithub's get_rate_limit) and the
 * `x-ratelimit-*` headers of every answer, errors included.
 */

const READ = testSecret('RATE_LIMIT_READ_TOKEN');

describe('rate limits of the GitHub-compatible API', () => {
  let database: Database;
  let server: FastifyInstance;
  let origin: string;

  beforeAll(async () => {
    database = await openDatabase((await createTestDatabase('sqlite')).url);
    server = Fastify();
    await server.register(githubApiRoutes({ database, tokens: { admin: undefined, read: READ, failures: new AuthFailures() }, filesDir: mkdtempSync(join(tmpdir(), 'forgesync-files-')) }), { prefix: '/github' });
    await server.listen({ port: 0, host: '127.0.0.1' });
    origin = `http://127.0.0.1:${(server.server.address() as { port: number }).port}`;
  });

  afterAll(async () => {
    await server?.close();
    await database?.close();
  });

  it('answers GET /rate_limit with a whole, generous budget for every resource', async () => {
    const octokit = new Octokit({ baseUrl: `${origin}/github`, auth: READ });
    const { data } = await octokit.rest.rateLimit.get();
    for (const resource of ['core', 'search', 'graphql'] as const) {
      const budget = data.resources[resource]!;
      expect(budget.limit).toBeGreaterThanOrEqual(5000);
      expect(budget.remaining).toBe(budget.limit);
      expect(budget.used).toBe(0);
      expect(budget.reset * 1000).toBeGreaterThanOrEqual(Date.now() - 1000);
    }
    expect(data.rate).toEqual(data.resources.core);
  });

  it('sends the x-ratelimit headers with every answer, errors included', async () => {
    const answers = [
      await fetch(`${origin}/github/rate_limit`, { headers: { authorization: `token ${READ}` } }),
      await fetch(`${origin}/github/repos/nobody/nothing`, { headers: { authorization: `token ${READ}` } }),
      await fetch(`${origin}/github/repos/nobody/nothing`),
    ];
    expect(answers.map((answer) => answer.status)).toEqual([200, 404, 401]);
    for (const answer of answers) {
      expect(Number(answer.headers.get('x-ratelimit-limit'))).toBeGreaterThanOrEqual(5000);
      expect(answer.headers.get('x-ratelimit-remaining')).toBe(answer.headers.get('x-ratelimit-limit'));
      expect(answer.headers.get('x-ratelimit-resource')).toBe('core');
      expect(Number(answer.headers.get('x-ratelimit-reset'))).toBeGreaterThan(0);
    }
  });
});
