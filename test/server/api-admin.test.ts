import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Lease } from '../../src/leases/lease.js';
import type { RegistryState } from '../../src/store/types.js';
import { startTestServer, type TestServer } from '../support/test-server.js';
import { replicationStores } from '../support/stores.js';

type Method = 'GET' | 'POST';

describe('HTTP API: bulk resync, overview, leases, OpenAPI', () => {
  let t: TestServer;
  const call = (method: Method, url: string, body?: unknown) =>
    t.server.inject({ method, url, headers: t.auth(), ...(body !== undefined ? { payload: body as object } : {}) });

  /** name → state, for every registry row. */
  const snapshot = async () =>
    Object.fromEntries((await t.app.replication.listSources()).map((s) => [s.name, { state: s.registry.state, seq: s.registry.requestedSeq }]));

  /** Puts source `name` into `state` the way a sync would (fence-guarded writes). */
  async function setState(name: string, state: RegistryState, fence: bigint): Promise<void> {
    const { id } = await t.app.replication.getSource(name);
    if (state === 'pending') return;
    const { registry } = replicationStores(t.app);
    const row = await registry.start(id, fence, new Date());
    expect(row).not.toBeNull();
    if (state === 'synced') {
      expect(await registry.finishSynced(id, fence, { targetSeq: row!.targetSeq, checksum: null, verified: true, now: new Date() })).toBe(true);
    } else if (state === 'failed') {
      const nextRetryAt = new Date(Date.now() + 3_600_000);
      expect(await registry.finishFailed(id, fence, { error: 'boom', nextRetryAt, missing: false, now: new Date() })).toBe(true);
    }
  }

  const layout: Record<string, RegistryState> = {
    f1: 'failed', f2: 'failed', f3: 'failed', s1: 'synced', s2: 'synced', p1: 'pending', r1: 'started',
  };

  beforeAll(async () => {
    t = await startTestServer();
    let fence = 1n;
    for (const [name, state] of Object.entries(layout)) {
      await replicationStores(t.app).sources.create({ name, url: `https://example.com/${name}.git` });
      await setState(name, state, fence++);
    }
  });
  afterAll(async () => {
    await t?.close();
  });

  it('reports per-state counts, scheduler state and capacity', async () => {
    const response = await call('GET', '/api/overview');
    expect(response.statusCode).toBe(200);
    expect(response.json()).toEqual({
      counts: { pending: 1, started: 1, synced: 2, failed: 3, verified: 2, mismatch: 0, missing: 0, total: 7 },
      scheduler: { state: 'stopped' },
      capacity: { running: 0, queued: 0, capacity: t.app.config.maxConcurrentSyncs },
    });
  });

  it('dry runs count exactly what a resync would touch and record nothing', async () => {
    const before = await snapshot();
    for (const [filter, expected] of [['failed', 3], ['all', 7], [{ state: 'synced' }, 2], [{ state: 'started' }, 1], [{ state: 'pending' }, 1]] as const) {
      const response = await call('POST', '/api/resync', { filter, dryRun: true });
      expect(response.statusCode).toBe(200);
      expect(response.json(), JSON.stringify(filter)).toEqual({ affected: expected, dryRun: true });
    }
    expect(await snapshot()).toEqual(before);
  });

  it('resyncs exactly the rows the filter selects and returns how many', async () => {
    const before = await snapshot();
    const failed = await call('POST', '/api/resync', { filter: 'failed' });
    expect(failed.json()).toEqual({ affected: 3, dryRun: false });
    const afterFailed = await snapshot();
    for (const [name, row] of Object.entries(before)) {
      if (layout[name] === 'failed') expect(afterFailed[name]).toEqual({ state: 'pending', seq: row.seq + 1 });
      else expect(afterFailed[name], name).toEqual(row);
    }
    // Failed rows are pending now: nothing left in state failed.
    expect((await call('POST', '/api/resync', { filter: { state: 'failed' } })).json()).toEqual({ affected: 0, dryRun: false });

    const synced = await call('POST', '/api/resync', { filter: { state: 'synced' } });
    expect(synced.json()).toEqual({ affected: 2, dryRun: false });
    const afterSynced = await snapshot();
    expect(afterSynced.s1).toEqual({ state: 'pending', seq: before.s1!.seq + 1 });
    expect(afterSynced.r1).toEqual(before.r1);

    const all = await call('POST', '/api/resync', { filter: 'all' });
    expect(all.json()).toEqual({ affected: 7, dryRun: false });
    const afterAll = await snapshot();
    for (const name of Object.keys(before)) expect(afterAll[name]!.seq, name).toBe(afterSynced[name]!.seq + 1);
    // A started row stays started: the running sync sees the new request when it finishes.
    expect(afterAll.r1!.state).toBe('started');
  });

  it('lists, inspects and force-releases leases by fence', async () => {
    const key = 'test:leases/with space';
    const path = `/api/leases/${encodeURIComponent(key)}`;
    const lease: Lease | null = await t.app.kernel.leases.tryAcquire(key, { ttlMs: 60_000, owner: 'api test' });
    expect(lease).not.toBeNull();
    const other = await t.app.kernel.leases.tryAcquire('other:key', { ttlMs: 60_000, owner: 'other' });
    try {
      const list = (await call('GET', `/api/leases?prefix=${encodeURIComponent('test:')}`)).json();
      expect(list.items).toHaveLength(1);
      expect(list.items[0]).toMatchObject({ key, fence: lease!.fence.toString(), owner: { name: 'api test', pid: process.pid } });
      expect((await call('GET', '/api/leases')).json().items.map((h: { key: string }) => h.key)).toEqual(['other:key', key]);

      const inspected = await call('GET', path);
      expect(inspected.statusCode).toBe(200);
      expect(inspected.json()).toMatchObject({ key, fence: lease!.fence.toString(), owner: { name: 'api test', host: expect.any(String) } });
      expect(Date.parse(inspected.json().expiresAt)).toBeGreaterThan(Date.now());

      const wrong = await call('POST', `${path}/release`, { fence: (lease!.fence + 1n).toString() });
      expect(wrong.json()).toEqual({ released: false });
      expect((await call('GET', path)).statusCode).toBe(200);
      for (const fence of ['abc', '0', -1, 1.5, '99999999999999999999']) {
        const bad = await call('POST', `${path}/release`, { fence });
        expect(bad.statusCode, String(fence)).toBe(400);
        expect(bad.json().message, String(fence)).toMatch(/fence/);
      }
      const right = await call('POST', `${path}/release`, { fence: Number(lease!.fence) });
      expect(right.json()).toEqual({ released: true });
      const gone = await call('GET', path);
      expect(gone.statusCode).toBe(404);
      expect(gone.json().message).toMatch(/is free/);
      expect((await call('POST', `${path}/release`)).json()).toEqual({ released: false });
      // Without a fence, whoever holds the key is released.
      expect((await call('POST', '/api/leases/other%3Akey/release', {})).json()).toEqual({ released: true });
      expect(t.logs.text).toContain('lease_force_release');
    } finally {
      await lease!.release().catch(() => undefined);
      await other?.release().catch(() => undefined);
    }
  });

  it('documents every API route with its schemas in /openapi.json', async () => {
    const response = await call('GET', '/openapi.json');
    expect(response.statusCode).toBe(200);
    const doc = response.json();
    const expected: Record<string, string[]> = {
      '/api/sources': ['get', 'post'],
      '/api/sources/{name}': ['get', 'patch', 'delete'],
      '/api/sources/{name}/sync': ['post'],
      '/api/sources/{name}/resync': ['post'],
      '/api/resync': ['post'],
      '/api/overview': ['get'],
      '/api/leases': ['get'],
      '/api/leases/{key}': ['get'],
      '/api/leases/{key}/release': ['post'],
    };
    for (const [path, methods] of Object.entries(expected)) {
      expect(doc.paths[path], path).toBeDefined();
      for (const method of methods) {
        const operation = doc.paths[path][method];
        expect(operation, `${method} ${path}`).toBeDefined();
        expect(operation.summary, `${method} ${path}`).toEqual(expect.any(String));
        expect(operation.security).toEqual([{ bearer: [] }]);
        expect(operation.responses['401'], `${method} ${path}`).toBeDefined();
      }
    }
    const list = doc.paths['/api/sources'].get;
    const state = list.parameters.find((p: { name: string }) => p.name === 'state');
    expect(state).toMatchObject({ in: 'query', schema: { enum: ['pending', 'started', 'synced', 'failed'] } });
    const item = list.responses['200'].content['application/json'].schema.properties.items.items;
    expect(item.properties).toHaveProperty('lastFailure');
    expect(item.properties.fence).toBeDefined();
    const create = doc.paths['/api/sources'].post;
    expect(create.requestBody.content['application/json'].schema).toMatchObject({ required: ['url'], additionalProperties: false });
    expect(create.responses['201']).toBeDefined();
    expect(create.responses['409']).toBeDefined();
    const detail = doc.paths['/api/sources/{name}'].get.responses['200'].content['application/json'].schema;
    expect(Object.keys(detail.properties)).toEqual(expect.arrayContaining(['lease', 'attempts', 'leaseKey', 'state']));
    expect(doc.paths['/api/resync'].post.requestBody.content['application/json'].schema.properties).toHaveProperty('dryRun');
    expect(doc.paths['/api/leases/{key}/release'].post.tags).toEqual(['leases']);
    expect(doc.components.securitySchemes.bearer).toMatchObject({ type: 'http', scheme: 'bearer' });
  });
});
