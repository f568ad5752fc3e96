import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { removeTempDirs, tempDir, Upstream } from '../support/git-fixtures.js';
import { startTestServer, type TestServer } from '../support/test-server.js';
import { testSecret } from '../support/secrets.js';
import { eventually } from '../support/eventually.js';

/*
 * Readers for teams: a token from the secrets file that sees only the
 * sources and imports its scope names, on every read surface. Everything
 * else answers as a name that does not exist would (never 403), and routes
 * that are not about a name are not there for it.
 */

const TEAM_A = testSecret('SCOPED_READER_TEAM_A');

describe('scoped readers', () => {
  let t: TestServer;
  let secretsFile: string;
  const basic = (token: string) => `Basic ${Buffer.from(`anyone:${token}`).toString('base64')}`;
  const get = (path: string, token = TEAM_A) => fetch(`${t.url}${path}`, { headers: { authorization: `Bearer ${token}` } });

  beforeAll(async () => {
    secretsFile = join(tempDir(), 'secrets.json');
    writeFileSync(secretsFile, JSON.stringify({ readers: { 'team-a': { token: TEAM_A, scope: ['team-a/*'] } } }));
    t = await startTestServer({ listen: true, env: { FORGESYNC_SECRETS_FILE: secretsFile } });
    for (const name of ['team-a/api', 'team-b/web']) {
      const upstream = Upstream.create(tempDir());
      upstream.commit();
      upstream.publish();
      await t.app.replication.addSource({ name, url: upstream.bare });
      expect((await t.app.replication.sync(name)).served).toBe(true);
    }
  });

  afterAll(async () => {
    await t?.close();
    removeTempDirs();
  });

  it('lists only the sources in scope, and hides the others as unknown names', async () => {
    const list = (await (await get('/api/sources')).json()) as { items: Array<{ name: string }>; total: number };
    expect(list.items.map((source) => source.name)).toEqual(['team-a/api']);
    expect(list.total).toBe(1);
    expect((await get(`/api/sources/${encodeURIComponent('team-a/api')}`)).status).toBe(200);
    const hidden = await get(`/api/sources/${encodeURIComponent('team-b/web')}`);
    const unknown = await get(`/api/sources/${encodeURIComponent('team-b/nothing')}`);
    expect(hidden.status).toBe(404);
    expect((await hidden.json()) as { message: string }).toEqual({ ...((await unknown.json()) as object), message: expect.stringContaining('team-b/web') });
    // The admin token still sees everything.
    const all = (await (await get('/api/sources', t.tokens.admin!)).json()) as { total: number };
    expect(all.total).toBe(2);
  });

  it('refuses snapshots and file reads of a source out of scope as unknown', async () => {
    const hidden = encodeURIComponent('team-b/web');
    const made = await fetch(`${t.url}/api/sources/${hidden}/snapshots`, { method: 'POST', headers: { ...t.auth(TEAM_A) }, body: JSON.stringify({ ref: 'main' }) });
    expect(made.status).toBe(404);
    expect((await get(`/api/sources/${hidden}/contents?ref=main&path=file.txt`)).status).toBe(404);
    expect((await get(`/api/sources/${encodeURIComponent('team-a/api')}/contents?ref=main&path=file.txt`)).status).toBe(200);
  });

  it('counts only what it sees on the overview, and does not find the routes that are not about one name', async () => {
    const overview = (await (await get('/api/overview')).json()) as { counts: { total: number; synced: number } };
    expect(overview.counts).toMatchObject({ total: 1, synced: 1 });
    for (const path of ['/api/leases', '/api/feeds', '/openapi.json']) {
      expect((await get(path)).status, path).toBe(404);
      expect((await get(path, t.tokens.admin!)).status, path).toBe(200);
    }
  });

  it('clones only what is in scope; a repository out of scope is not found, like one that does not exist', async () => {
    const refs = (name: string) => fetch(`${t.url}/git/${name}.git/info/refs?service=git-upload-pack`, { headers: { authorization: basic(TEAM_A) } });
    expect((await refs('team-a/api')).status).toBe(200);
    const hidden = await refs('team-b/web');
    expect(hidden.status).toBe(404);
    expect(await hidden.text()).toBe('forgesync: repository "team-b/web" not found\n');
  });

  it('follows the secrets file: a reader removed or made unusable is refused, and its token is never logged', async () => {
    writeFileSync(secretsFile, JSON.stringify({ readers: { 'team-a': { token: 'short', scope: ['team-a/*'] } } }));
    await eventually('the reader refused', async () => (await get('/api/sources')).status === 401);
    expect(t.logs.text).toContain('credentials_unusable');
    expect(t.logs.text).not.toContain(TEAM_A);
    writeFileSync(secretsFile, JSON.stringify({ readers: { 'team-a': { token: TEAM_A, scope: ['team-a/*'] } } }));
    await eventually('the reader back', async () => (await get('/api/sources')).status === 200);
  });
});
