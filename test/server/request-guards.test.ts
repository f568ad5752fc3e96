import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/app/config.js';
import { buildServer } from '../../src/server/app.js';
import { testSecret } from '../support/secrets.js';
import { startTestServer, type TestServer } from '../support/test-server.js';
import { replicationStores } from '../support/stores.js';

const ADMIN = testSecret('GUARD_ADMIN_TOKEN');
const READ = testSecret('GUARD_READ_TOKEN');

describe('HTTP service: no open API, no cross-site or rebinding requests, no token guessing', () => {
  let t: TestServer;
  beforeAll(async () => {
    t = await startTestServer({ tokens: { admin: ADMIN, read: READ } });
  });
  afterAll(async () => {
    await t?.close();
  });

  it('refuses to build without an admin token', async () => {
    await expect(buildServer(t.app, { tokens: { admin: undefined, read: READ } })).rejects.toThrow(/needs an admin token.*FORGESYNC_ADMIN_TOKEN/);
  });

  it('answers only to the host names it knows (421 otherwise), except for probes and scrapes', async () => {
    for (const url of ['/api/overview', '/', '/hooks/github', '/openapi.json']) {
      const response = await t.server.inject({ method: 'GET', url, headers: { ...t.auth(ADMIN), host: 'rebind.attacker.example' } });
      expect(response.statusCode, url).toBe(421);
      expect(response.json().message).toMatch(/FORGESYNC_ALLOWED_HOSTS/);
    }
    for (const host of ['localhost:8080', '127.0.0.1', '[::1]:8080']) {
      expect((await t.server.inject({ method: 'GET', url: '/api/overview', headers: { ...t.auth(ADMIN), host } })).statusCode, host).toBe(200);
    }
    for (const url of ['/livez', '/readyz', '/metrics']) {
      expect((await t.server.inject({ method: 'GET', url, headers: { host: '10.1.2.3:8080' } })).statusCode, url).toBe(200);
    }
  });

  it('takes state changes only as JSON and only from its own origin', async () => {
    const before = (await replicationStores(t.app).registry.counts()).pending;
    const body = JSON.stringify({ filter: 'all' });
    const authorization = `Bearer ${ADMIN}`;
    for (const type of ['text/plain', 'application/x-www-form-urlencoded', 'multipart/form-data; boundary=x']) {
      const response = await t.server.inject({ method: 'POST', url: '/api/resync', headers: { authorization, 'content-type': type }, payload: body });
      expect(response.statusCode, type).toBe(415);
    }
    expect((await t.server.inject({ method: 'POST', url: '/api/resync', headers: { authorization }, payload: '' })).statusCode).toBe(415);
    const foreign = await t.server.inject({ method: 'POST', url: '/api/resync', headers: { ...t.auth(ADMIN), origin: 'https://attacker.example' }, payload: body });
    expect(foreign.statusCode).toBe(403);
    expect((await t.server.inject({ method: 'DELETE', url: '/api/sources/x', headers: { ...t.auth(ADMIN), origin: 'null' } })).statusCode).toBe(403);
    expect((await replicationStores(t.app).registry.counts()).pending).toBe(before);
    // Same origin, JSON: fine, and an action without a body may say JSON with an empty body.
    const own = await t.server.inject({ method: 'POST', url: '/api/resync', headers: { ...t.auth(ADMIN), origin: 'http://localhost:8080' }, payload: body });
    expect(own.statusCode).toBe(200);
    const empty = await t.server.inject({ method: 'POST', url: '/api/sources/nothing-here/sync', headers: t.auth(ADMIN), payload: '' });
    expect(empty.statusCode).toBe(404);
  });

  it('accepts the token as "token <t>" too (what Octokit sends)', async () => {
    expect((await t.server.inject({ method: 'GET', url: '/api/overview', headers: { authorization: `token ${READ}` } })).statusCode).toBe(200);
  });

  it('says only ok or failed per component on /readyz', async () => {
    const ok = await t.server.inject({ method: 'GET', url: '/readyz' });
    expect(ok.json()).toEqual({ status: 'ok', database: 'ok', leases: 'ok' });
  });

  it('limits failed authentications: 429 after 20 failures from one address, with Retry-After; valid tokens always pass', async () => {
    const from = (address: string, token: string) => t.server.inject({ method: 'GET', url: '/api/overview', headers: { authorization: `Bearer ${token}` }, remoteAddress: address });
    for (let i = 0; i < 21; i++) expect((await from('198.51.100.7', `wrong-${i}-${'x'.repeat(16)}`)).statusCode, `attempt ${i + 1}`).toBe(i < 20 ? 401 : 429);
    const limited = await from('198.51.100.7', `wrong-again-${'x'.repeat(16)}`);
    expect(limited.statusCode).toBe(429);
    expect(Number(limited.headers['retry-after'])).toBeGreaterThan(0);
    expect((await t.server.inject({ method: 'GET', url: '/api/overview', remoteAddress: '198.51.100.7' })).statusCode).toBe(429);
    // Others' failures never lock a valid token out, admin or read, from the same address.
    expect((await from('198.51.100.7', ADMIN)).statusCode).toBe(200);
    expect((await from('198.51.100.7', READ)).statusCode).toBe(200);
    expect((await t.server.inject({ method: 'POST', url: '/api/resync', headers: t.auth(ADMIN), remoteAddress: '198.51.100.7', payload: JSON.stringify({ filter: 'failed', dryRun: true }) })).statusCode).toBe(200);
    // Another address is not affected.
    expect((await from('198.51.100.8', `wrong-elsewhere-${'x'.repeat(16)}`)).statusCode).toBe(401);
  });

  it('limits failures per token too: one wrong token tried from many addresses gets 429', async () => {
    const stale = `stale-token-${'y'.repeat(16)}`;
    for (let i = 0; i < 20; i++) {
      expect((await t.server.inject({ method: 'GET', url: '/api/overview', headers: t.auth(stale), remoteAddress: `203.0.113.${i + 1}` })).statusCode).toBe(401);
    }
    const limited = await t.server.inject({ method: 'GET', url: '/api/overview', headers: t.auth(stale), remoteAddress: '203.0.113.99' });
    expect(limited.statusCode).toBe(429);
    expect(limited.json().message).toMatch(/try again in \d+ s/);
    // That address with another token, and the valid token, are fine.
    expect((await t.server.inject({ method: 'GET', url: '/api/overview', headers: t.auth(`other-${'y'.repeat(16)}`), remoteAddress: '203.0.113.99' })).statusCode).toBe(401);
    expect((await t.server.inject({ method: 'GET', url: '/api/overview', headers: t.auth(READ), remoteAddress: '203.0.113.99' })).statusCode).toBe(200);
  });

  it('answers /openapi.json to a read or admin token only', async () => {
    const without = await t.server.inject({ method: 'GET', url: '/openapi.json', remoteAddress: '192.0.2.50' });
    expect(without.statusCode).toBe(401);
    expect(without.body).not.toContain('/api/sources');
    for (const token of [READ, ADMIN]) {
      const response = await t.server.inject({ method: 'GET', url: '/openapi.json', headers: t.auth(token) });
      expect(response.statusCode).toBe(200);
      expect(Object.keys(response.json().paths)).toContain('/api/sources');
    }
  });
});

describe('HTTP service behind a reverse proxy (FORGESYNC_TRUST_PROXY)', () => {
  it('reads the setting as addresses and CIDRs, and refuses anything else by name', () => {
    expect(loadConfig({ cwd: '/srv/app', env: {} }).trustProxy).toBeUndefined();
    expect(loadConfig({ cwd: '/srv/app', env: { FORGESYNC_TRUST_PROXY: '10.0.0.7, 192.168.0.0/16,::1' } }).trustProxy).toEqual(['10.0.0.7/32', '192.168.0.0/16', '::1/128']);
    expect(() => loadConfig({ cwd: '/srv/app', env: { FORGESYNC_TRUST_PROXY: 'proxy.example' } })).toThrow(/trustProxy .*"proxy\.example" is not a CIDR/);
  });

  const wrong = (i: number) => `wrong-${i}-${'z'.repeat(16)}`;
  /** 21 failures from client A through the proxy at 127.0.0.1, then one failure each from A and B. */
  async function throughProxy(t: TestServer): Promise<{ a: number; b: number }> {
    const send = (client: string, token: string) =>
      t.server.inject({ method: 'GET', url: '/api/overview', headers: { authorization: `Bearer ${token}`, 'x-forwarded-for': client }, remoteAddress: '127.0.0.1' });
    for (let i = 0; i < 21; i++) await send('198.51.100.20', wrong(i));
    return { a: (await send('198.51.100.20', wrong(100))).statusCode, b: (await send('198.51.100.21', wrong(101))).statusCode };
  }

  it('throttles the clients a trusted proxy names separately', async () => {
    const t = await startTestServer({ tokens: { admin: ADMIN, read: READ }, trustProxy: ['127.0.0.1/32'] });
    try {
      expect(await throughProxy(t)).toEqual({ a: 429, b: 401 });
    } finally {
      await t.close();
    }
  });

  it('ignores X-Forwarded-For without it, and from peers it does not name', async () => {
    const t = await startTestServer({ tokens: { admin: ADMIN, read: READ } });
    try {
      expect(await throughProxy(t)).toEqual({ a: 429, b: 429 });
    } finally {
      await t.close();
    }
    const other = await startTestServer({ tokens: { admin: ADMIN, read: READ }, trustProxy: ['10.9.9.9'] });
    try {
      expect(await throughProxy(other)).toEqual({ a: 429, b: 429 });
    } finally {
      await other.close();
    }
  });

  it('checks the host name a trusted proxy forwards, and only from it', async () => {
    const t = await startTestServer({ tokens: { admin: ADMIN, read: READ }, trustProxy: ['127.0.0.1'] });
    try {
      const get = (remoteAddress: string, headers: Record<string, string>) =>
        t.server.inject({ method: 'GET', url: '/api/overview', headers: { ...t.auth(READ), host: '127.0.0.1:8080', ...headers }, remoteAddress });
      expect((await get('127.0.0.1', { 'x-forwarded-host': 'rebind.attacker.example' })).statusCode).toBe(421);
      expect((await get('127.0.0.1', { 'x-forwarded-host': 'localhost' })).statusCode).toBe(200);
      // From anyone else X-Forwarded-Host means nothing: Host is checked.
      expect((await get('192.0.2.1', { 'x-forwarded-host': 'rebind.attacker.example' })).statusCode).toBe(200);
    } finally {
      await t.close();
    }
  });
});

describe('/readyz when a backend fails', () => {
  it('names the component, never the error', async () => {
    const t = await startTestServer();
    try {
      await t.app.kernel.leases.close();
      const response = await t.server.inject({ method: 'GET', url: '/readyz' });
      expect(response.statusCode).toBe(503);
      expect(response.json()).toEqual({ status: 'unavailable', database: 'ok', leases: 'failed' });
    } finally {
      await t.close();
    }
  });
});
