import { existsSync, readdirSync, realpathSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, isAbsolute, join, relative } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sourceStatusJson } from '../../src/replication/commands.js';
import { syncLeaseKey } from '../../src/replication/sync.js';
import type { SourceDetailJson } from '../../src/replication/http/schemas.js';
import { eventually } from '../support/harness.js';
import { Upstream } from '../support/upstream.js';
import { startTestServer, type TestServer } from '../support/test-server.js';
import { testSecret } from '../support/secrets.js';

const ADMIN = testSecret('ADMIN_TOKEN');
const READ = testSecret('READ_TOKEN');

type Method = 'GET' | 'POST' | 'PATCH' | 'DELETE';

describe('HTTP API: sources', () => {
  let t: TestServer;
  /** A request with the admin token, another token, or none (null). */
  const call = (method: Method, url: string, body?: unknown, token: string | null = ADMIN) =>
    t.server.inject({ method, url, headers: t.auth(token), ...(body !== undefined ? { payload: body as object } : {}) });

  beforeAll(async () => {
    t = await startTestServer({ tokens: { admin: ADMIN, read: READ } });
  });
  afterAll(async () => {
    await t?.close();
  });

  it('creates, lists, shows, syncs, updates and deletes a source against a real upstream', async () => {
    const upstream = Upstream.create();
    const created = await call('POST', '/api/sources', { url: upstream.bare, name: 'alpha', interval: '1h' });
    expect(created.statusCode, created.body).toBe(201);
    expect(created.json()).toMatchObject({ name: 'alpha', url: upstream.bare, state: 'pending', intervalMs: 3_600_000, enabled: true, requestedSeq: 1 });

    const list = await call('GET', '/api/sources?search=ALP', undefined, READ);
    expect(list.statusCode).toBe(200);
    expect(list.json()).toMatchObject({ total: 1, limit: 50, offset: 0, items: [{ name: 'alpha' }] });

    const before = (await call('GET', '/api/sources/alpha', undefined, READ)).json();
    expect(before).toMatchObject({ name: 'alpha', lease: null, attempts: [], leaseKey: expect.stringMatching(/^sync:repository:\d+$/) });

    const synced = await t.app.replication.sync('alpha', { trigger: 'cli' });
    expect(synced.registry.state).toBe('synced');
    const detail = await call('GET', '/api/sources/alpha', undefined, READ);
    expect(detail.statusCode).toBe(200);
    const body = detail.json();
    // The API shape is a superset of `forgesync status --json`, the mirror's path relative to the mirrors directory.
    expect(body).toMatchObject({ ...sourceStatusJson(synced), mirrorPath: basename(synced.registry.mirrorPath!) });
    expect(body).toMatchObject({ state: 'synced', verificationState: 'verified', checksum: expect.any(String), lastSyncedAt: expect.any(String) });
    expect(body.attempts).toHaveLength(1);
    expect(body.attempts[0]).toMatchObject({ trigger: 'cli', result: 'synced', error: null, durationMs: expect.any(Number), refsChanged: expect.any(Number) });
    expect(Date.parse(body.attempts[0].finishedAt)).toBeGreaterThanOrEqual(Date.parse(body.attempts[0].startedAt));
    expect(body.attempts[0].fence).toMatch(/^\d+$/);
    expect((await call('GET', '/api/sources/alpha?attempts=0', undefined, READ)).json().attempts).toEqual([]);

    // A credential is a name the operator defined, bound to hosts: env: references are refused,
    // and so is a credential for another host, with one message whatever the reason.
    process.env.FORGESYNC_CREDENTIAL_ALPHA_BOT = testSecret('ALPHA_BOT_TOKEN');
    process.env.FORGESYNC_CREDENTIAL_ALPHA_BOT_HOSTS = 'git.example.com';
    const envRef = await call('PATCH', '/api/sources/alpha', { credentialRef: 'env:ALPHA_TOKEN' });
    expect(envRef.statusCode).toBe(400);
    expect(envRef.json().message).toMatch(/is not a credential name.*FORGESYNC_CREDENTIAL_<NAME>/);
    const elsewhere = await call('PATCH', '/api/sources/alpha', { url: 'https://attacker.example/x.git', credentialRef: 'alpha_bot' });
    const undefinedName = await call('PATCH', '/api/sources/alpha', { url: 'https://git.example.com/alpha.git', credentialRef: 'nobody' });
    expect(elsewhere.statusCode).toBe(400);
    expect(elsewhere.json().message).toBe(undefinedName.json().message.replace('"nobody"', '"alpha_bot"').replace('git.example.com', 'attacker.example'));
    const patched = await call('PATCH', '/api/sources/alpha', { interval: '30m', url: 'https://git.example.com/alpha.git', credentialRef: 'alpha_bot' });
    expect(patched.statusCode, patched.body).toBe(200);
    expect(patched.json()).toMatchObject({ intervalMs: 1_800_000, cron: null, credentialRef: 'alpha_bot' });
    delete process.env.FORGESYNC_CREDENTIAL_ALPHA_BOT;
    delete process.env.FORGESYNC_CREDENTIAL_ALPHA_BOT_HOSTS;
    const disabled = await call('PATCH', '/api/sources/alpha', { enabled: false, credentialRef: null, cron: '*/5 * * * *' });
    expect(disabled.json()).toMatchObject({ enabled: false, credentialRef: null, cron: '*/5 * * * *' });

    // The URL change recorded a request (the next sync re-clones); then one more each.
    const requested = await call('POST', '/api/sources/alpha/sync');
    expect(requested.statusCode).toBe(202);
    expect(requested.json()).toEqual({ name: 'alpha', requested: synced.registry.requestedSeq + 2 });
    const resync = await call('POST', '/api/sources/alpha/resync');
    expect(resync.json()).toEqual({ name: 'alpha', requested: synced.registry.requestedSeq + 3 });
    expect((await t.app.replication.getSource('alpha')).registry.state).toBe('pending');

    const removed = await call('DELETE', '/api/sources/alpha');
    expect(removed.statusCode).toBe(204);
    expect(removed.body).toBe('');
    expect(existsSync(synced.registry.mirrorPath!)).toBe(false);
    expect((await call('GET', '/api/sources/alpha', undefined, READ)).statusCode).toBe(404);
  });

  it('never shows credentials of a URL', async () => {
    // A password in the URL is refused, and the refusal does not repeat it.
    const refused = await call('POST', '/api/sources', { url: 'https://robot:s3cr3t-pass@example.com/org/repo.git', name: 'secretive' });
    expect(refused.statusCode).toBe(400);
    expect(refused.json().message).toMatch(/remote URL "https:\/\/robot:\*\*\*@example.com\/org\/repo.git".*password/);
    expect(refused.body).not.toContain('s3cr3t');
    // A user name is kept, but shown redacted.
    const created = await call('POST', '/api/sources', { url: 'https://deploy-robot@example.com/org/repo.git', name: 'userinfo' });
    expect(created.statusCode, created.body).toBe(201);
    expect(created.json().url).toBe('https://***@example.com/org/repo.git');
    for (const url of ['/api/sources?search=userinfo', '/api/sources/userinfo']) {
      const response = await call('GET', url, undefined, READ);
      expect(response.statusCode).toBe(200);
      expect(response.body).not.toContain('deploy-robot');
    }
    await call('DELETE', '/api/sources/userinfo');
  });

  it('names no directory of the server: mirrorPath is relative to the mirrors directory, git failures show placeholders', async () => {
    const { dataDir, mirrorsDir } = t.app.config;
    const upstream = Upstream.create();
    expect((await call('POST', '/api/sources', { url: upstream.bare, name: 'pathless' })).statusCode).toBe(201);
    const synced = await t.app.replication.sync('pathless');
    expect(synced.registry.state).toBe('synced');
    const mirror = synced.registry.mirrorPath!;
    const listed = (await call('GET', '/api/sources?search=pathless', undefined, READ)).json().items[0];
    expect(listed.mirrorPath).toBe(relative(mirrorsDir, mirror));
    expect(isAbsolute(listed.mirrorPath)).toBe(false);
    expect((await call('GET', '/api/sources/pathless', undefined, READ)).json().mirrorPath).toBe(relative(mirrorsDir, mirror));

    // A new upstream whose objects are gone: its refs are listed, but git's clone into a
    // temporary directory under the mirrors fails, and the error names that directory.
    const broken = Upstream.create();
    for (const entry of readdirSync(join(broken.bare, 'objects'))) {
      if (/^[0-9a-f]{2}$|^pack$/.test(entry)) rmSync(join(broken.bare, 'objects', entry), { recursive: true });
    }
    expect((await call('PATCH', '/api/sources/pathless', { url: broken.bare })).statusCode).toBe(200);
    const failed = (await t.app.replication.sync('pathless')).registry;
    expect(failed.state).toBe('failed');
    // The operator's view (the row, `forgesync status --json`, the log) keeps the server's paths.
    expect(failed.lastFailure).toContain(mirrorsDir);
    expect(sourceStatusJson(await t.app.replication.getSource('pathless'))).toMatchObject({ mirrorPath: mirror, lastFailure: failed.lastFailure });
    expect(t.logs.text).toContain(mirrorsDir);

    const detail = await call('GET', '/api/sources/pathless', undefined, READ);
    const list = await call('GET', '/api/sources?search=pathless', undefined, READ);
    for (const response of [detail, list]) {
      expect(response.statusCode).toBe(200);
      expect(response.body).not.toContain(dataDir);
      expect(response.body).not.toContain(realpathSync(dataDir));
    }
    const body = detail.json();
    expect(body.lastFailure).toMatch(/^git clone .* <tmp>\/\S+ <mirrors>\/\.tmp-\S+ failed with exit code \d+: /);
    expect(body.lastFailure).not.toContain(tmpdir());
    expect(body.attempts[0]).toMatchObject({ result: 'failed', error: body.lastFailure });
    // The URL is the admin's own, shown as given (credentials redacted).
    expect(body.url).toBe(broken.bare);
    await call('DELETE', '/api/sources/pathless');
  });

  it('refuses invalid input with 400 and a message naming the field', async () => {
    const cases: [Method, string, unknown, RegExp][] = [
      ['POST', '/api/sources', { url: 'ftp://example.com/x.git' }, /remote URL/],
      ['POST', '/api/sources', { url: 'https://example.com/x.git', name: 'bad name!' }, /source name/],
      ['POST', '/api/sources', { url: 'https://example.com/x.git', interval: 'soon' }, /interval "soon"/],
      ['POST', '/api/sources', { url: 'https://example.com/x.git', cron: 'not a cron' }, /cron expression/],
      ['POST', '/api/sources', { url: 'https://example.com/x.git', credentialRef: 'sh:rm -rf' }, /credential reference/],
      ['POST', '/api/sources', { url: 'https://example.com/x.git', credentialRef: 'file:/etc/machine-id' }, /credential reference/],
      ['POST', '/api/sources', { url: 'https://example.com/x.git', credentialRef: 'webhook_secret' }, /not available for example.com/],
      ['POST', '/api/sources', { url: 'https://example.com/x.git', interval: '1h', cron: '0 * * * *' }, /cron.*either interval or cron/],
      ['POST', '/api/sources', { name: 'x' }, /url/],
      ['POST', '/api/sources', { url: 'https://example.com/x.git', intervall: '1h' }, /intervall/],
      ['GET', '/api/sources?state=done', undefined, /state/],
      ['GET', '/api/sources?limit=0', undefined, /limit/],
      ['GET', '/api/sources?limit=501', undefined, /limit/],
      ['GET', '/api/sources?offset=-1', undefined, /offset/],
      ['PATCH', '/api/sources/whatever', {}, /at least one field/],
      ['PATCH', '/api/sources/whatever', { enabled: 'yes' }, /enabled/],
      ['POST', '/api/resync', { filter: 'everything' }, /filter/],
      ['POST', '/api/resync', { filter: { state: 'done' } }, /state/],
    ];
    for (const [method, url, body, message] of cases) {
      const response = await call(method, url, body);
      expect(response.statusCode, `${method} ${url} ${JSON.stringify(body)}: ${response.body}`).toBe(400);
      expect(response.json().message, `${method} ${url} ${JSON.stringify(body)}`).toMatch(message);
    }
    expect((await call('GET', '/api/sources', undefined, READ)).json().total).toBe(0);
  });

  it('answers 409 for a duplicate name and 404 for unknown sources', async () => {
    expect((await call('POST', '/api/sources', { url: 'https://example.com/dup.git' })).statusCode).toBe(201);
    const duplicate = await call('POST', '/api/sources', { url: 'https://example.com/other/dup.git' });
    expect(duplicate.statusCode).toBe(409);
    expect(duplicate.json().message).toMatch(/"dup" already exists/);
    for (const [method, url, body] of [
      ['GET', '/api/sources/nope', undefined],
      ['PATCH', '/api/sources/nope', { enabled: false }],
      ['DELETE', '/api/sources/nope', undefined],
      ['POST', '/api/sources/nope/sync', undefined],
      ['POST', '/api/sources/nope/resync', undefined],
    ] as [Method, string, unknown][]) {
      const response = await call(method, url, body);
      expect(response.statusCode, `${method} ${url}`).toBe(404);
      expect(response.json().message).toMatch(/nope/);
    }
    await call('DELETE', '/api/sources/dup');
  });

  it('requires a token: none → 401, read token cannot change anything → 403, admin can', async () => {
    const none = await call('GET', '/api/sources', undefined, null);
    expect(none.statusCode).toBe(401);
    expect(none.headers['www-authenticate']).toBe('Bearer');
    expect((await call('GET', '/api/overview', undefined, 'wrong-token')).statusCode).toBe(401);
    // Authentication comes before validation: an anonymous caller learns nothing about the body.
    expect((await call('POST', '/api/sources', { nonsense: true }, null)).statusCode).toBe(401);
    expect((await call('GET', '/api/sources', undefined, READ)).statusCode).toBe(200);
    expect((await call('GET', '/api/leases', undefined, READ)).statusCode).toBe(200);
    for (const [method, url, body] of [
      ['POST', '/api/sources', { url: 'https://example.com/ro.git' }],
      ['PATCH', '/api/sources/ro', { enabled: false }],
      ['DELETE', '/api/sources/ro', undefined],
      ['POST', '/api/sources/ro/sync', undefined],
      ['POST', '/api/resync', { filter: 'all' }],
      ['POST', '/api/leases/some-key/release', {}],
    ] as [Method, string, unknown][]) {
      const response = await call(method, url, body, READ);
      expect(response.statusCode, `${method} ${url}`).toBe(403);
    }
    expect((await call('GET', '/api/sources?search=ro', undefined, READ)).json().total).toBe(0);
    const admin = await call('POST', '/api/sources', { url: 'https://example.com/ro.git' }, ADMIN);
    expect(admin.statusCode).toBe(201);
    expect((await call('DELETE', '/api/sources/ro', undefined, ADMIN)).statusCode).toBe(204);
  });

  it('pages through the list and filters by state', async () => {
    for (const name of ['p1', 'p2', 'p3', 'p4', 'p5']) await call('POST', '/api/sources', { url: `https://example.com/${name}.git` });
    const page = (await call('GET', '/api/sources?limit=2&offset=2&search=p', undefined, READ)).json();
    expect(page).toMatchObject({ total: 5, limit: 2, offset: 2 });
    expect(page.items.map((item: { name: string }) => item.name)).toEqual(['p3', 'p4']);
    expect((await call('GET', '/api/sources?state=pending&search=p', undefined, READ)).json().total).toBe(5);
    expect((await call('GET', '/api/sources?state=synced', undefined, READ)).json()).toMatchObject({ total: 0, items: [] });
    for (const name of ['p1', 'p2', 'p3', 'p4', 'p5']) await call('DELETE', `/api/sources/${name}`);
  });

  it('shows the holder of the source\'s sync lease while one is held', async () => {
    await call('POST', '/api/sources', { url: 'https://example.com/held.git' });
    const source = await t.app.replication.getSource('held');
    const lease = await t.app.kernel.leases.tryAcquire(syncLeaseKey(source.id), { ttlMs: 60_000, owner: 'sync held' });
    expect(lease).not.toBeNull();
    try {
      const detail = (await call('GET', '/api/sources/held', undefined, READ)).json();
      expect(detail.leaseKey).toBe(syncLeaseKey(source.id));
      expect(detail.lease).toMatchObject({
        key: syncLeaseKey(source.id),
        fence: lease!.fence.toString(),
        owner: { name: 'sync held', pid: process.pid, acquiredAt: expect.any(String) },
        expiresAt: expect.any(String),
      });
      expect(detail.lease.expiresInMs).toBeGreaterThan(50_000);
    } finally {
      await lease!.release();
    }
    expect((await call('GET', '/api/sources/held', undefined, READ)).json().lease).toBeNull();
    await call('DELETE', '/api/sources/held');
  });
});

describe('HTTP API over a real socket with the service running', () => {
  let t: TestServer;
  beforeAll(async () => {
    t = await startTestServer({ tokens: { admin: ADMIN }, listen: true, service: true });
  });
  afterAll(async () => {
    await t?.close();
  });

  it('adds a source, and the workers sync it until the detail says synced', async () => {
    const upstream = Upstream.create();
    const headers = { ...t.auth(ADMIN), 'content-type': 'application/json' };
    const created = await fetch(`${t.url}/api/sources`, { method: 'POST', headers, body: JSON.stringify({ url: upstream.bare, name: 'live' }) });
    expect(created.status).toBe(201);
    const detail = await eventually('source "live" to be synced', async () => {
      const body = (await (await fetch(`${t.url}/api/sources/live`, { headers })).json()) as SourceDetailJson;
      return body.state === 'synced' && body.attempts.length > 0 ? body : null;
    });
    expect(detail.attempts[0]).toMatchObject({ result: 'synced', trigger: 'manual' });
    const overview = await (await fetch(`${t.url}/api/overview`, { headers })).json();
    expect(overview).toMatchObject({ counts: { synced: 1, total: 1 }, scheduler: { state: 'active' } });
    expect((await fetch(`${t.url}/api/overview`)).status).toBe(401);
  });
});
