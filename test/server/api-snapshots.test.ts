import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { git } from '../support/git-fixtures.js';
import { testSecret } from '../support/secrets.js';
import { Upstream } from '../support/upstream.js';
import { startTestServer, type TestServer } from './support.js';

const ADMIN = testSecret('ADMIN_TOKEN');
const READ = testSecret('READ_TOKEN');

describe('HTTP API: snapshots', () => {
  let t: TestServer;
  let upstream: Upstream;
  const call = (method: 'GET' | 'POST' | 'DELETE', url: string, body?: unknown, token: string | null = READ) =>
    t.server.inject({ method, url, headers: t.auth(token), ...(body !== undefined ? { payload: body as object } : {}) });

  beforeAll(async () => {
    t = await startTestServer({ tokens: { admin: ADMIN, read: READ } });
    upstream = Upstream.create();
    await t.app.addSource({ url: upstream.bare, name: 'app' });
  });
  afterAll(async () => {
    await t?.close();
  });

  it('creates a snapshot after a sync, lists it with its hold, and releases it', async () => {
    const sha = upstream.commit('main', 2);
    const created = await call('POST', '/api/sources/app/snapshots', { ref: 'main', sync: true });
    expect(created.statusCode, created.body).toBe(201);
    const body = created.json();
    expect(body).toMatchObject({ source: 'app', ref: 'main', sha, stale: false, temporaryClone: false, expiresAt: expect.any(String) });
    for (const file of git(upstream.bare, 'ls-tree', '--name-only', sha).split('\n')) {
      expect(readFileSync(join(body.path, file), 'utf8')).toBe(git(upstream.bare, 'cat-file', 'blob', `${sha}:${file}`) + '\n');
    }

    const listed = await call('GET', '/api/snapshots');
    expect(listed.json()).toEqual([expect.objectContaining({ source: 'app', sha, path: body.path, holds: [expect.objectContaining({ handle: body.handle, owner: 'api' })] })]);

    expect((await call('DELETE', `/api/snapshots/${body.handle}`)).statusCode).toBe(204);
    expect((await call('DELETE', `/api/snapshots/${body.handle}`)).statusCode).toBe(404);
    expect((await call('GET', '/api/snapshots')).json()[0].holds).toEqual([]);
    expect(existsSync(body.path)).toBe(true);
  });

  it('reads a file and a directory of any ref without materialising', async () => {
    const sha = upstream.commit('main');
    await t.app.syncAndWait('app');
    const file = git(upstream.bare, 'ls-tree', '--name-only', sha).split('\n')[0] as string;
    const blob = await call('GET', `/api/sources/app/contents?ref=${sha}&path=${encodeURIComponent(file)}`);
    expect(blob.json()).toEqual({ type: 'blob', sha, path: file, size: expect.any(Number), encoding: 'utf8', content: git(upstream.bare, 'cat-file', 'blob', `${sha}:${file}`) + '\n' });
    const tree = await call('GET', '/api/sources/app/contents?ref=main');
    expect(tree.json()).toMatchObject({ type: 'tree', sha, path: '' });
    expect(tree.json().entries.map((entry: { name: string }) => entry.name)).toContain(file);
  });

  it('answers bad requests with clear errors and no token with 401', async () => {
    const cases: [string, unknown, number, RegExp][] = [
      ['/api/sources/app/snapshots', { ref: '../../etc' }, 400, /not a valid branch/],
      ['/api/sources/app/snapshots', { ref: 'no-such-branch' }, 404, /is not a branch, tag or commit of app/],
      ['/api/sources/nope/snapshots', { ref: 'main' }, 404, /no source named "nope"/],
      ['/api/sources/app/snapshots', { ref: 'main', extra: 1 }, 400, /invalid request/],
    ];
    for (const [url, body, status, message] of cases) {
      const response = await call('POST', url, body);
      expect(response.statusCode, response.body).toBe(status);
      expect(response.json().message).toMatch(message);
    }
    expect((await call('GET', '/api/sources/app/contents?ref=main&path=../x')).statusCode).toBe(400);
    expect((await call('GET', '/api/sources/app/contents?ref=main&path=missing')).statusCode).toBe(404);
    expect((await call('POST', '/api/sources/app/snapshots', { ref: 'main' }, null)).statusCode).toBe(401);
  });
});
