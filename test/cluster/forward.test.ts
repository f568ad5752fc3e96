import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { promisify } from 'node:util';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Forgesync } from '../../src/app/forgesync.js';
import { buildServer, type ForgesyncServer } from '../../src/server/app.js';
import { BIN, forgesyncCli } from '../support/cluster/processes.js';
import { testSecret } from '../support/secrets.js';
import { Upstream } from '../support/upstream.js';
import { FIXTURE_ENV } from '../support/git-fixtures.js';
import { createTestDatabase, eventually, openTestForgesync, testConfig, testJobsUrl, type CapturedLogs, type TestDatabase } from '../support/harness.js';
import { shardStore, snapshotHolds } from '../support/stores.js';

const ADMIN = testSecret('ADMIN_TOKEN');
const READ = testSecret('READ_TOKEN');
const CLUSTER = testSecret('CLUSTER_TOKEN');
const run = promisify(execFile);

/**
 * Reads that need a source's files, in distributed mode: an api process
 * with no files forwards them to the internal endpoint of the worker owning
 * the source's shard, which answers as the api's caller; the answer comes
 * back streamed, byte for byte.
 */
describe('shards: an api process forwards snapshot and contents reads to the owning worker', () => {
  const apps: Forgesync[] = [];
  let database: TestDatabase;
  let api: ForgesyncServer;
  let apiLogs: CapturedLogs;
  let base: string;
  const names = new Map<string, string>();
  /** A 3 MB file: more than one chunk on every hop. */
  const big = Buffer.alloc(3 * 1024 * 1024, 'forgesync ').toString();

  beforeAll(async () => {
    database = await createTestDatabase('postgres');
    const env = { FORGESYNC_JOBS_URL: testJobsUrl(14), FORGESYNC_CLUSTER_TOKEN: CLUSTER };
    for (const shard of ['a', 'b']) {
      // One of them schedules too (the retries and periodic syncs; a new source's first sync is nudged at once anyway).
      const role = shard === 'a' ? 'worker,scheduler' : 'worker';
      const { app } = await openTestForgesync(testConfig(database.url, { ...env, FORGESYNC_SHARD: shard, FORGESYNC_ROLE: role }));
      apps.push(app);
      await app.startService();
    }
    // An api process: it has no files, so its snapshot and contents reads go to the owning worker.
    const { app: apiApp, logs } = await openTestForgesync(testConfig(database.url, { ...env, FORGESYNC_ROLE: 'api' }));
    apiLogs = logs;
    apps.push(apiApp);
    api = await buildServer(apiApp, { tokens: { admin: ADMIN, read: READ } });
    base = await api.listen({ port: 0, host: '127.0.0.1' });

    // Sources until each shard holds one.
    for (let i = 0; names.size < 2; i++) {
      const upstream = Upstream.create();
      // Committed with the next change.
      writeFileSync(join(upstream.work, 'big.txt'), big);
      upstream.commit();
      const source = await apiApp.replication.addSource({ url: upstream.bare, name: `fwd-${i}` });
      if (!names.has(source.shard!)) names.set(source.shard!, source.name);
    }
    for (const name of names.values()) {
      await eventually(`${name} synced`, async () => (await apiApp.replication.getSource(name)).registry.state === 'synced', 30_000);
    }
  }, 90_000);

  afterAll(async () => {
    await api?.close();
    for (const app of apps.splice(0).reverse()) await app.close();
    await database?.drop();
  });

  const call = (method: string, path: string, options: { body?: unknown; token?: string } = {}) =>
    fetch(`${base}${path}`, {
      method,
      // State changes are JSON, as the API's request guards require.
      headers: { authorization: `Bearer ${options.token ?? READ}`, ...(method !== 'GET' ? { 'content-type': 'application/json' } : {}) },
      ...(options.body !== undefined ? { body: JSON.stringify(options.body) } : {}),
    });

  it('answers contents reads of sources on either shard from that shard, a large blob intact', async () => {
    for (const [shard, name] of names) {
      const listing = await call('GET', `/api/sources/${name}/contents?ref=HEAD`);
      expect(listing.status).toBe(200);
      expect(((await listing.json()) as { entries: { name: string }[] }).entries.map((entry) => entry.name)).toContain('big.txt');
      const blob = (await (await call('GET', `/api/sources/${name}/contents?ref=HEAD&path=big.txt`)).json()) as { content: string; size: number };
      expect(blob.size, `shard ${shard}`).toBe(big.length);
      expect(blob.content === big).toBe(true);
      // The worker's own answers pass through as they are (a ref that does not exist).
      const missing = await call('GET', `/api/sources/${name}/contents?ref=no-such-branch`);
      expect(missing.status).toBe(404);
    }
  });

  it('makes a snapshot on the owning shard, held by the caller: listed and released through the api', async () => {
    const [onA, onB] = [names.get('a')!, names.get('b')!];
    const created = await call('POST', `/api/sources/${onB}/snapshots`, { body: { ref: 'HEAD' } });
    expect(created.status).toBe(201);
    const snapshot = (await created.json()) as { handle: string; source: string };
    const workerB = apps.find((app) => app.config.shardId === 'b')!;
    // Made on b's worker, which holds it; the answer gives its handle, never where it lies on that machine.
    expect(snapshotHolds(workerB).find(snapshot.handle)).toMatchObject({ handle: snapshot.handle });
    expect(snapshot).not.toHaveProperty('path');
    expect(JSON.stringify(snapshot)).not.toContain(workerB.config.dataDir);
    // The hold is the read token's, as on one process: the admin token does not see it.
    const mine = (await (await call('GET', '/api/snapshots')).json()) as { holds: { handle: string }[] }[];
    expect(mine.flatMap((entry) => entry.holds.map((hold) => hold.handle))).toEqual([snapshot.handle]);
    expect(JSON.stringify(mine)).not.toContain(workerB.config.dataDir);
    const admins = (await (await call('GET', '/api/snapshots', { token: ADMIN })).json()) as { holds: unknown[] }[];
    expect(admins.flatMap((entry) => entry.holds)).toEqual([]);
    expect((await call('DELETE', `/api/snapshots/${snapshot.handle}`, { token: ADMIN })).status).toBe(404);

    const other = (await (await call('POST', `/api/sources/${onA}/snapshots`, { body: { ref: 'HEAD' } })).json()) as { handle: string };
    expect((await call('DELETE', `/api/snapshots/${snapshot.handle}`)).status).toBe(204);
    expect((await call('DELETE', `/api/snapshots/${snapshot.handle}`)).status).toBe(404);
    expect((await call('DELETE', `/api/snapshots/${other.handle}`)).status).toBe(204);
  });

  it('forgesync show on a machine without the files reads them from the owning shard', async () => {
    const apiApp = apps[apps.length - 1]!;
    const { config } = apiApp;
    const env = {
      FORGESYNC_DATA_DIR: config.dataDir,
      FORGESYNC_DATABASE_URL: config.databaseUrl,
      FORGESYNC_JOBS_URL: config.jobsUrl!,
      FORGESYNC_CLUSTER_TOKEN: CLUSTER,
      FORGESYNC_ROLE: 'api',
    };
    for (const name of names.values()) {
      expect((await forgesyncCli(['show', name, 'HEAD:big.txt'], env)) === big).toBe(true);
      const tree = JSON.parse(await forgesyncCli(['show', name, 'HEAD:', '--json'], env)) as { entries: { name: string }[] };
      expect(tree.entries.map((entry) => entry.name)).toContain('big.txt');
    }
    // The worker's refusal comes back as the CLI's own error.
    const failed = await run(process.execPath, [BIN, 'show', names.get('a')!, 'no-such-branch:'], { env: { PATH: process.env.PATH, ...env } }).catch((error: { code: number; stderr: string }) => error);
    expect('code' in failed && failed.code).toBe(1);
    expect((failed as { stderr: string }).stderr).toMatch(/no-such-branch/);
  });

  it('serves clones and fetches (v0 and v2) of sources on either shard through the api, streamed both ways', async () => {
    for (const name of names.values()) {
      const { registry } = await apps[apps.length - 1]!.replication.getSource(name);
      expect(registry.state).toBe('synced');
      for (const version of ['0', '2']) {
        const dir = mkdtempSync(join(tmpdir(), 'forgesync-clone-'));
        const gitArgs = ['-c', `http.extraHeader=Authorization: Bearer ${READ}`, '-c', `protocol.version=${version}`];
        await run('git', [...gitArgs, 'clone', '-q', '--filter=blob:none', `${base}/git/${name}.git`, 'copy'], { cwd: dir, env: FIXTURE_ENV });
        // The checkout fetched the left-out blobs through the api too (a POST with a request body).
        expect(readFileSync(join(dir, 'copy', 'big.txt'), 'utf8')).toBe(big);
        rmSync(dir, { recursive: true, force: true });
      }
    }
  });

  it('lets only the cluster token into a worker endpoint, and says why a read cannot be forwarded', async () => {
    const [endpoint] = (await shardStore(apps[0]!).endpoints('a')).map((entry) => entry.endpoint!);
    expect(endpoint).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    const path = `/api/sources/${names.get('a')}/contents?ref=HEAD`;
    expect((await fetch(`${endpoint}${path}`, { headers: { authorization: `Bearer ${READ}` } })).status).toBe(401);
    expect((await fetch(`${endpoint}${path}`, { headers: { authorization: `Bearer ${CLUSTER}` } })).status).toBe(200);

    // Shard b's worker goes away: its sources' reads answer 503, naming the shard, never its internal address.
    const workerB = apps.find((app) => app.config.shardId === 'b')!;
    const [endpointB] = (await shardStore(apps[0]!).endpoints('b')).map((entry) => entry.endpoint!);
    await workerB.close();
    apps.splice(apps.indexOf(workerB), 1);
    const gone = await call('GET', `/api/sources/${names.get('b')}/contents?ref=HEAD`);
    expect(gone.status).toBe(503);
    const { message } = (await gone.json()) as { message: string };
    expect(message).toMatch(/^the files of shard "b" cannot be read now: its worker did not answer \(ECONNREFUSED\)/);
    expect(message).not.toContain(new URL(endpointB!).host);
    expect(message).not.toMatch(/127\.0\.0\.1|:\d{2,5}\b/);
    // The operator's log has it.
    expect(apiLogs.lines.some((line) => (line.err as { endpoint?: string } | undefined)?.endpoint === endpointB)).toBe(true);
    // A listing cannot be whole without b: it says so rather than leaving its holds out.
    const listing = await call('GET', '/api/snapshots');
    expect(listing.status).toBe(503);
    // Shard a still answers.
    expect((await call('GET', path)).status).toBe(200);
  });
});
