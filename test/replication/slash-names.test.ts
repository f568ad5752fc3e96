import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { gitAsync, removeTempDirs, tempDir, Upstream } from '../support/git-fixtures.js';
import { startTestServer, type TestServer } from '../support/test-server.js';

/*
 * Source names with slashes (`team-a/api`, as forge paths go) in every place a
 * name goes: the API (percent-encoded in a path), snapshots, the generic
 * webhook, clones under /git/, and the mirror's directory, which stays one
 * entry directly under the mirrors root.
 */

describe('source names with slashes', () => {
  let t: TestServer;
  let upstream: Upstream;
  let head: string;
  const NAME = 'team-a/api';
  const encoded = encodeURIComponent(NAME);

  beforeAll(async () => {
    t = await startTestServer({ listen: true });
    upstream = Upstream.create(tempDir());
    head = upstream.commit();
    upstream.publish();
    await t.app.replication.addSource({ name: NAME, url: upstream.bare });
    expect((await t.app.replication.sync(NAME)).served).toBe(true);
  });

  afterAll(async () => {
    await t?.close();
    removeTempDirs();
  });

  it('keeps the mirror one directory directly under the mirrors root', () => {
    const entries = readdirSync(t.app.config.mirrorsDir).filter((entry) => !entry.startsWith('.'));
    expect(entries).toHaveLength(1);
    expect(entries[0]).toMatch(/^\d+-team-a-api-[0-9a-f]{12}\.git$/);
  });

  it('answers the API with the name percent-encoded, and refuses traversal', async () => {
    const got = await fetch(`${t.url}/api/sources/${encoded}`, { headers: t.auth() });
    expect(got.status).toBe(200);
    expect(((await got.json()) as { name: string }).name).toBe(NAME);
    const listed = (await (await fetch(`${t.url}/api/sources`, { headers: t.auth() })).json()) as { sources?: Array<{ name: string }> } | Array<{ name: string }>;
    expect(JSON.stringify(listed)).toContain(`"name":"${NAME}"`);
    const resync = await fetch(`${t.url}/api/sources/${encoded}/resync`, { method: 'POST', headers: t.auth() });
    expect(resync.status).toBeLessThan(300);
    const traversal = await fetch(`${t.url}/api/sources/${encodeURIComponent('team-a/../x')}`, { headers: t.auth() });
    expect(traversal.status).toBe(404);
    const added = await fetch(`${t.url}/api/sources`, { method: 'POST', headers: t.auth(), body: JSON.stringify({ name: 'team-a/../../etc', url: upstream.bare }) });
    expect(added.status).toBe(400);
    expect(await added.text()).toMatch(/source name/);
  });

  it('serves snapshots of it', async () => {
    const made = await fetch(`${t.url}/api/sources/${encoded}/snapshots`, { method: 'POST', headers: t.auth(), body: JSON.stringify({ ref: 'main' }) });
    expect(made.status).toBeLessThan(300);
    const snapshot = (await made.json()) as { sha: string };
    const contents = await fetch(`${t.url}/api/sources/${encoded}/contents?ref=${snapshot.sha}&path=file.txt`, { headers: t.auth() });
    expect(contents.status).toBe(200);
  });

  it('is cloned under /git/ with and without .git', async () => {
    for (const path of [`${NAME}.git`, NAME]) {
      const dest = join(tempDir(), 'clone');
      const header = `http.extraHeader=Authorization: Bearer ${t.tokens.admin}`;
      await gitAsync(tempDir(), '-c', header, 'clone', '-q', `${t.url}/git/${path}`, dest);
      const cloned = await gitAsync(dest, 'rev-parse', 'HEAD');
      expect(cloned).toBe(head);
    }
  });
});
