import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildServer } from '../../src/server/app.js';
import { testSecret } from '../support/secrets.js';
import { startTestServer, type TestServer } from './support.js';

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
    const before = (await t.app.replication.registry.counts()).pending;
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
    expect((await t.app.replication.registry.counts()).pending).toBe(before);
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

  it('slows down token guessing: 429 after 20 failures from one address, with Retry-After', async () => {
    const guess = (token: string) => t.server.inject({ method: 'GET', url: '/api/overview', headers: { authorization: `Bearer ${token}` }, remoteAddress: '198.51.100.7' });
    for (let i = 0; i < 20; i++) expect((await guess(`wrong-${i}-${'x'.repeat(16)}`)).statusCode).toBe(401);
    const limited = await guess(`wrong-again-${'x'.repeat(16)}`);
    expect(limited.statusCode).toBe(429);
    expect(Number(limited.headers['retry-after'])).toBeGreaterThan(0);
    // Even the right token waits; other addresses are not affected.
    expect((await guess(ADMIN)).statusCode).toBe(429);
    expect((await t.server.inject({ method: 'GET', url: '/api/overview', headers: t.auth(ADMIN), remoteAddress: '198.51.100.8' })).statusCode).toBe(200);
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
