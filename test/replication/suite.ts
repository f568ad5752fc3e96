import { execFileSync, spawn } from 'node:child_process';
import { once } from 'node:events';
import { dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { existsSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Forgesync } from '../../src/app/forgesync.js';
import type { ForgesyncConfig } from '../../src/app/config.js';
import { openLeaseManager } from '../../src/leases/open.js';
import { SourceExistsError } from '../../src/store/errors.js';
import { syncLeaseKey } from '../../src/replication/sync.js';
import { buildServer } from '../../src/server/app.js';
import { GitHttpServer } from '../support/git-http-server.js';
import { anyFileContains } from '../support/git-fixtures.js';
import { Upstream } from '../support/upstream.js';
import { createTestDatabase, eventually, openTestForgesync, refsOf, testConfig, type CapturedLogs, type TestDatabase } from '../support/harness.js';
import { testSecret } from '../support/secrets.js';
import { replicationStores } from '../support/stores.js';
import { syncServiceOf, verifierOf } from '../support/replication-parts.js';

const CLI = fileURLToPath(new URL('../../bin/forgesync.js', import.meta.url));

/** Every row of every table, as text, to search for secrets. */
async function databaseText(app: Forgesync): Promise<string> {
  let text = '';
  for (const table of ['sources', 'registry', 'sync_attempts', 'forgesync_leases']) {
    const rows = await app.kernel.database.db.selectFrom(table as 'sources').selectAll().execute();
    text += JSON.stringify(rows, (_key, value) => (typeof value === 'bigint' ? value.toString() : value));
  }
  return text;
}

/** Counts git fetch/clone processes and the most that ran at once, by wrapping the runner. */
function countGit(app: Forgesync) {
  const stats = { fetches: 0, clones: 0, inFlight: 0, maxInFlight: 0 };
  const run = app.runner.run.bind(app.runner);
  app.runner.run = async (args, options) => {
    const mutating = args.includes('fetch') || args.includes('clone');
    if (mutating) {
      if (args.includes('fetch')) stats.fetches++;
      else stats.clones++;
      stats.maxInFlight = Math.max(stats.maxInFlight, ++stats.inFlight);
    }
    try {
      return await run(args, options);
    } finally {
      if (mutating) stats.inFlight--;
    }
  };
  return stats;
}

/**
 * The scheduler state of `app` as its HTTP overview reports it (GET
 * /api/overview, what an operator reads): `read()` asks once; `close()` stops
 * the server (not the app).
 */
async function schedulerStateOf(app: Forgesync): Promise<{ read(): Promise<string>; close(): Promise<void> }> {
  const admin = testSecret('SCHEDULER_ADMIN_TOKEN');
  const server = await buildServer(app, { tokens: { admin, read: undefined } });
  await server.ready();
  return {
    read: async () => {
      const response = await server.inject({ method: 'GET', url: '/api/overview', headers: { authorization: `Bearer ${admin}` } });
      expect(response.statusCode).toBe(200);
      return (response.json() as { scheduler: { state: string } }).scheduler.state;
    },
    close: () => server.close(),
  };
}

/**
 * The replication suite, run once per registry database kind and job
 * transport: `jobsUrl` (a BullMQ queue on Redis) or in-process jobs.
 */
export function describeReplication(kind: 'sqlite' | 'postgres', jobsUrl?: string): void {
  describe(`replication on ${kind}, ${jobsUrl ? 'BullMQ' : 'in-process'} jobs`, () => {
    let database: TestDatabase;
    let config: ForgesyncConfig;
    let app: Forgesync;
    let logs: CapturedLogs;

    beforeAll(async () => {
      database = await createTestDatabase(kind);
      config = testConfig(database.url, jobsUrl ? { FORGESYNC_JOBS_URL: jobsUrl } : {});
      ({ app, logs } = await openTestForgesync(config));
    });
    afterAll(async () => {
      await app?.close();
      await database?.drop();
    });

    it('clones, then follows new commits, branches, tags, deletions and force-pushes', async () => {
      const upstream = Upstream.create();
      const source = await app.replication.addSource({ url: upstream.bare, name: 'incremental' });
      let status = await app.replication.sync(source.name);
      expect(status.registry.state).toBe('synced');
      const mirror = status.registry.mirrorPath!;
      expect(mirror.startsWith(config.mirrorsDir)).toBe(true);
      expect(refsOf(mirror)).toBe(refsOf(upstream.bare));

      upstream.commit('main', 2);
      upstream.commit('feature/x');
      upstream.tag('v1.0');
      upstream.tag('light', 'HEAD', false);
      status = await app.replication.sync(source.name);
      expect(refsOf(mirror)).toBe(refsOf(upstream.bare));

      upstream.deleteBranch('feature/x');
      upstream.deleteTag('light');
      upstream.forcePush('main');
      upstream.commit('dev');
      upstream.setHead('dev');
      status = await app.replication.sync(source.name);
      expect(status.registry.state).toBe('synced');
      expect(status.registry.verificationState).toBe('verified');
      expect(refsOf(mirror)).toBe(refsOf(upstream.bare));
      expect(readFileSync(join(mirror, 'HEAD'), 'utf8').trim()).toBe('ref: refs/heads/dev');
    });

    it('skips the fetch when nothing changed upstream', async () => {
      const upstream = Upstream.create();
      const source = await app.replication.addSource({ url: upstream.bare, name: 'noop' });
      await app.replication.sync(source.name);
      const stats = countGit(app);
      const status = await app.replication.sync(source.name);
      expect(status.registry.state).toBe('synced');
      expect(stats.fetches + stats.clones).toBe(0);
      const [last] = await replicationStores(app).registry.attempts(source.id, 1);
      expect(last?.result).toBe('noop');
    });

    it('collapses 50 concurrent triggers into a couple of fetches, never two at once', async () => {
      const upstream = Upstream.create();
      const source = await app.replication.addSource({ url: upstream.bare, name: 'storm' });
      await app.replication.sync(source.name);
      const { app: server } = await openTestForgesync(config);
      server.startService();
      const syncService = syncServiceOf(app);
      const stats = countGit(app);
      const serverStats = countGit(server);
      upstream.commit('main');
      await Promise.all(
        Array.from({ length: 50 }, (_, i) =>
          i % 2 ? server.replication.requestSync(source.name, { trigger: 'webhook' }) : syncService.sync(source.id, 'library'),
        ),
      );
      const synced = await eventually('storm source to be synced and caught up', async () => {
        const current = await app.replication.getSource(source.name);
        const row = current.registry;
        const load = await server.kernel.jobs.load('sync');
        return row.state === 'synced' && row.completedSeq >= row.requestedSeq && load.running + load.queued === 0 ? current : null;
      });
      await server.close();
      stats.fetches += serverStats.fetches;
      stats.maxInFlight = Math.max(stats.maxInFlight, serverStats.maxInFlight);
      expect(refsOf(synced.registry.mirrorPath!)).toBe(refsOf(upstream.bare));
      expect(stats.maxInFlight).toBe(1);
      expect(stats.fetches).toBeGreaterThanOrEqual(1);
      expect(stats.fetches).toBeLessThanOrEqual(3);
    });

    it('logs a skip naming the holder when another process has the lease, then serves the request', async () => {
      const upstream = Upstream.create();
      const source = await app.replication.addSource({ url: upstream.bare, name: 'contended' });
      await app.replication.sync(source.name);
      const other = await openLeaseManager(config.leaseUrl);
      const held = await other.acquire(syncLeaseKey(source.id), { ttlMs: 10_000, owner: 'full sync' });
      upstream.commit('main');
      await replicationStores(app).registry.request(source.id, 'manual');
      expect(await syncServiceOf(app).sync(source.id, 'manual')).toBe('skipped');
      const skip = logs.lines.find((line) => line.event === 'lease_skip' && line.source === 'contended' && line.holder !== `sync contended(${process.pid})`);
      expect(skip).toMatchObject({ lease_key: syncLeaseKey(source.id), holder: `full sync(${process.pid})` });
      expect(String(skip?.msg)).toContain(`operation skipped - process locked by "full sync(${process.pid})"`);
      expect((await app.replication.getSource(source.name)).registry.state).toBe('pending');
      await held.release();
      await other.close();
      const { app: server } = await openTestForgesync(config);
      server.startService();
      const done = await eventually('the skipped request to be served', async () => {
        const current = await app.replication.getSource(source.name);
        return current.registry.state === 'synced' && current.registry.completedSeq >= current.registry.requestedSeq ? current : null;
      });
      await server.close();
      expect(refsOf(done.registry.mirrorPath!)).toBe(refsOf(upstream.bare));
    });

    it('backs off exponentially with jitter after failures', async () => {
      const source = await app.replication.addSource({ url: 'http://127.0.0.1:9/nothing-listens-here.git', name: 'failing' });
      const before = Date.now();
      let status = await app.replication.sync(source.name);
      expect(status.registry.state).toBe('failed');
      expect(status.registry.retryCount).toBe(1);
      const firstDelay = status.registry.nextRetryAt!.getTime() - before;
      expect(firstDelay).toBeGreaterThanOrEqual(500 - 50);
      expect(firstDelay).toBeLessThanOrEqual(1000 + 2000);
      expect(status.registry.lastFailure).toBeTruthy();
      status = await app.replication.sync(source.name);
      expect(status.registry.retryCount).toBe(2);
      const secondDelay = status.registry.nextRetryAt!.getTime() - Date.now();
      expect(secondDelay).toBeGreaterThanOrEqual(1000 - 200);
      expect(secondDelay).toBeLessThanOrEqual(2000);
    });

    it('marks an upstream that is gone as missing on primary instead of looping', async () => {
      const upstream = Upstream.create();
      const source = await app.replication.addSource({ url: upstream.bare, name: 'vanishing' });
      await app.replication.sync(source.name);
      rmSync(upstream.bare, { recursive: true, force: true });
      const status = await app.replication.sync(source.name);
      expect(status.registry.state).toBe('failed');
      expect(status.registry.missingOnPrimary).toBe(true);
      // Retried on the slow cadence (retry max, 60 s here), not the fast backoff.
      expect(status.registry.nextRetryAt!.getTime() - Date.now()).toBeGreaterThan(20_000);
    });

    it('re-verifies mirrors: a ref changed behind its back is caught and re-synced', async () => {
      const upstream = Upstream.create();
      upstream.commit('topic');
      const source = await app.replication.addSource({ url: upstream.bare, name: 'tampered' });
      const synced = await app.replication.sync(source.name);
      const verifier = verifierOf(app);
      expect(await verifier.verify(source.id)).toBe('verified');
      const mirror = synced.registry.mirrorPath!;
      execFileSync('git', ['--git-dir', mirror, 'update-ref', '-d', 'refs/heads/topic']);
      expect(await verifier.verify(source.id)).toBe('mismatch');
      const flagged = await app.replication.getSource(source.name);
      expect(flagged.registry.verificationState).toBe('mismatch');
      expect(flagged.registry.state).toBe('pending');
      const repaired = await app.replication.sync(source.name);
      expect(repaired.registry.state).toBe('synced');
      expect(repaired.registry.verificationState).toBe('verified');
      expect(refsOf(mirror)).toBe(refsOf(upstream.bare));
    });

    it('runs one active scheduler however many processes serve, and fails over', async () => {
      const { app: first } = await openTestForgesync(config);
      const { app: second } = await openTestForgesync(config);
      const [firstState, secondState] = [await schedulerStateOf(first), await schedulerStateOf(second)];
      await first.startService();
      await eventually('first scheduler active', async () => (await firstState.read()) === 'active');
      await second.startService();
      // Several ticks (100 ms here) later the second still stands by: the lease is held.
      await new Promise((resolve) => setTimeout(resolve, 400));
      expect(await secondState.read()).toBe('standby');
      expect(await firstState.read()).toBe('active');
      await firstState.close();
      await first.close();
      await eventually('second scheduler to take over', async () => (await secondState.read()) === 'active');
      await secondState.close();
      await second.close();
    });

    it('re-clones when the URL changes', async () => {
      const first = Upstream.create();
      const second = Upstream.create();
      second.commit('other');
      const source = await app.replication.addSource({ url: first.bare, name: 'moving' });
      const before = await app.replication.sync(source.name);
      await app.replication.updateSource(source.name, { url: second.bare });
      const after = await app.replication.sync(source.name);
      expect(after.registry.state).toBe('synced');
      expect(refsOf(after.registry.mirrorPath!)).toBe(refsOf(second.bare));
      expect(existsSync(before.registry.mirrorPath!) && before.registry.mirrorPath !== after.registry.mirrorPath).toBe(false);
    });

    it('refuses malicious input before anything is stored or run', async () => {
      const count = (await app.replication.listSources({})).length;
      const bad = [
        '-oProxyCommand=touch /tmp/forgesync-pwned',
        '--upload-pack=touch /tmp/forgesync-pwned',
        'ext::sh -c touch% /tmp/forgesync-pwned',
        'fd::17',
      ];
      for (const url of bad) await expect(app.replication.addSource({ url, name: 'evil' })).rejects.toThrow();
      await expect(app.replication.addSource({ url: Upstream.create().bare, name: '../escape' })).rejects.toThrow(/name/);
      await expect(app.replication.addSource({ url: Upstream.create().bare, name: 'a/../../b' })).rejects.toThrow(/name/);
      expect(existsSync('/tmp/forgesync-pwned')).toBe(false);
      expect((await app.replication.listSources({})).length).toBe(count);
    });

    it('recovers a worker SIGKILLed mid-fetch: the mirror stays sound and the row converges', async () => {
      const root = dirname(Upstream.create().bare);
      const upstream = Upstream.create(root, 'killed.git');
      const server = await GitHttpServer.start({ root });
      try {
        const url = server.url('killed.git');
        const source = await app.replication.addSource({ url, name: 'killed' });
        const first = await app.replication.sync(source.name);
        upstream.commit('main', 3);
        let fetching = false;
        server.hold = (request) => request.method === 'POST' && request.path.endsWith('/git-upload-pack');
        server.onHold = () => (fetching = true);
        const child = spawn(process.execPath, [CLI, 'sync', 'killed', '--wait'], {
          env: {
            ...process.env,
            FORGESYNC_DATA_DIR: config.dataDir,
            FORGESYNC_DATABASE_URL: config.databaseUrl,
            ...(config.jobsUrl ? { FORGESYNC_JOBS_URL: config.jobsUrl } : {}),
            FORGESYNC_GIT_PROTOCOLS: config.gitProtocols,
            ...(config.allowNetworks ? { FORGESYNC_ALLOW_NETWORKS: config.allowNetworks.join(',') } : {}),
            FORGESYNC_LEASE_TTL: '2s',
          },
          stdio: 'ignore',
        });
        await eventually('the child to be fetching', () => fetching);
        expect((await app.replication.getSource('killed')).registry.state).toBe('started');
        child.kill('SIGKILL');
        await once(child, 'exit');
        server.hold = () => false;
        execFileSync('git', ['--git-dir', first.registry.mirrorPath!, 'fsck', '--no-progress'], { stdio: 'pipe' });
        const { app: server2 } = await openTestForgesync(config);
        server2.startService();
        const recovered = await eventually('the killed row to converge', async () => {
          const current = await app.replication.getSource('killed');
          return current.registry.state === 'synced' && current.registry.completedSeq >= current.registry.requestedSeq ? current : null;
        });
        await server2.close();
        expect(refsOf(recovered.registry.mirrorPath!)).toBe(refsOf(upstream.bare));
        execFileSync('git', ['--git-dir', recovered.registry.mirrorPath!, 'fsck', '--no-progress'], { stdio: 'pipe' });
        expect(logs.text.length).toBeGreaterThan(0);
      } finally {
        await server.close();
      }
    });

    it('keeps a private upstream token out of logs, the database, argv and the mirror', async () => {
      const token = testSecret('PRIVATE_REPO_TOKEN', 'ghp_');
      process.env.FORGESYNC_CREDENTIAL_PRIVATE_REPO = token;
      const root = dirname(Upstream.create().bare);
      const upstream = Upstream.create(root, 'private.git');
      const server = await GitHttpServer.start({ root, token });
      try {
        const argv: string[][] = [];
        const run = app.runner.run.bind(app.runner);
        app.runner.run = async (args, options) => {
          argv.push(args);
          return run(args, options);
        };
        process.env.FORGESYNC_CREDENTIAL_PRIVATE_REPO_HOSTS = new URL(server.url('private.git')).host;
        const source = await app.replication.addSource({ url: server.url('private.git'), name: 'private', credentialRef: 'private_repo' });
        upstream.commit('main');
        const status = await app.replication.sync(source.name);
        expect(status.registry.state).toBe('synced');
        expect(refsOf(status.registry.mirrorPath!)).toBe(refsOf(upstream.bare));
        expect(server.requests.some((request) => String(request.headers.authorization ?? '').length > 0)).toBe(true);
        expect(argv.length).toBeGreaterThan(0);
        expect(argv.flat().join(' ')).not.toContain(token);
        expect(logs.text).not.toContain(token);
        expect(await databaseText(app)).not.toContain(token);
        expect(anyFileContains(status.registry.mirrorPath!, token)).toBeUndefined();
        expect(anyFileContains(config.dataDir, token)).toBeUndefined();
        // And a wrong token fails without echoing the secret.
        process.env.FORGESYNC_CREDENTIAL_PRIVATE_REPO = `${token}-wrong`;
        upstream.commit('main');
        const failed = await app.replication.sync(source.name);
        expect(failed.registry.state).toBe('failed');
        expect(failed.registry.lastFailure ?? '').not.toContain(token);
        expect(logs.text).not.toContain(token);
      } finally {
        delete process.env.FORGESYNC_CREDENTIAL_PRIVATE_REPO;
        delete process.env.FORGESYNC_CREDENTIAL_PRIVATE_REPO_HOSTS;
        await server.close();
      }
    });

    it('sync (sync --wait) succeeds once a successful round served its request, though another process ran it and a later round began', async () => {
      const upstream = Upstream.create();
      const { app: holder } = await openTestForgesync(config);
      try {
        const source = await app.replication.addSource({ url: upstream.bare, name: 'served-elsewhere' });
        await app.replication.sync(source.name);
        // The holder's round 1 lingers after its fetch, round 2 a little less, round 3 hangs until stopped.
        let fetches = 0;
        const run = holder.runner.run.bind(holder.runner);
        holder.runner.run = async (args, options) => {
          if (!args.includes('fetch')) return run(args, options);
          const linger = [1000, 600][fetches++];
          if (linger === undefined) {
            await new Promise((resolve) => options?.signal?.addEventListener('abort', resolve, { once: true }));
            throw new Error('stopped');
          }
          const result = await run(args, options);
          await new Promise((resolve) => setTimeout(resolve, linger));
          return result;
        };
        upstream.commit('main');
        await replicationStores(app).registry.request(source.id, 'webhook');
        const stop = new AbortController();
        const holding = syncServiceOf(holder).sync(source.id, 'library', stop.signal);
        await eventually('round 1 to fetch', () => fetches === 1);
        // Recorded during round 1, so served by round 2, which the holder runs, not us.
        const waiting = app.replication.sync(source.name, { timeoutMs: 30_000 });
        await new Promise((resolve) => setTimeout(resolve, 100));
        upstream.commit('main');
        await eventually('round 2 to fetch', () => fetches === 2);
        // A push and a request during round 2 make the holder go on with round 3.
        upstream.commit('main');
        await app.replication.requestSync(source.name, { trigger: 'webhook' });
        const result = await waiting;
        expect(result.served).toBe(true);
        // The row is already busy with round 3 (or about to be): not 'synced', and still a success.
        expect(result.registry.state).not.toBe('synced');
        expect(result.registry.completedSeq).toBe(result.registry.requestedSeq - 1);
        stop.abort(new Error('test over'));
        expect(await holding).toBe('lost');
      } finally {
        await holder.close();
      }
    });

    it('stops a sync whose lease is taken away mid-fetch: its write is refused, the attempt says lease lost, the next holder\'s row is intact', async () => {
      const root = dirname(Upstream.create().bare);
      const upstream = Upstream.create(root, 'taken.git');
      const server = await GitHttpServer.start({ root });
      const other = await openLeaseManager(config.leaseUrl);
      const { registry } = replicationStores(app);
      try {
        const source = await app.replication.addSource({ url: server.url('taken.git'), name: 'taken-away' });
        await app.replication.sync(source.name);
        upstream.commit('main');
        const base = server.uploadPackPosts().length;
        server.hold = (request) => request.method === 'POST' && request.path.endsWith('/git-upload-pack');
        await registry.request(source.id, 'webhook');
        const syncing = syncServiceOf(app).sync(source.id, 'library');
        await eventually('the fetch to be in flight', () => server.uploadPackPosts().length === base + 1);
        const before = await registry.get(source.id);
        expect(before.state).toBe('started');
        // An operator force-releases the lease and another worker takes the source over.
        expect(await other.forceRelease(syncLeaseKey(source.id))).toBe(true);
        const next = await other.acquire(syncLeaseKey(source.id), { ttlMs: 30_000, owner: 'next holder' });
        expect(next.fence).toBeGreaterThan(before.fence!);
        const taken = await registry.start(source.id, next.fence, new Date());
        expect(taken?.state).toBe('started');
        // The first sync finds out at its next heartbeat, kills git and stops, the fetch still unanswered.
        expect(await syncing).toBe('lost');
        const row = await registry.get(source.id);
        // Its fenced write (putting the row back to pending) was refused: the row is the next holder's.
        expect(row.fence).toBe(next.fence);
        expect(row.state).toBe('started');
        expect(row.targetSeq).toBe(taken!.targetSeq);
        const [attempt] = await registry.attempts(source.id, 1);
        expect(attempt).toMatchObject({ result: 'failed', fence: before.fence });
        expect(attempt!.error).toMatch(/^lease lost/);
        expect(await registry.releaseStarted(source.id, next.fence)).toBe(true);
        await next.release();
      } finally {
        await other.close();
        await server.close();
      }
    });

    it('keeps sources whose names sanitize alike apart, and takes names as unique whatever their case', async () => {
      const upstream = Upstream.create();
      await app.replication.addSource({ url: upstream.bare, name: 'coll' });
      await app.replication.addSource({ url: upstream.bare, name: 'coll.' });
      const coll = await app.replication.sync('coll');
      const dotted = await app.replication.sync('coll.');
      expect(coll.registry.mirrorPath).not.toBe(dotted.registry.mirrorPath);
      await app.replication.removeSource('coll.');
      expect(existsSync(dotted.registry.mirrorPath!)).toBe(false);
      expect(refsOf(coll.registry.mirrorPath!)).toBe(refsOf(upstream.bare));
      await expect(app.replication.addSource({ url: Upstream.create().bare, name: 'COLL' })).rejects.toBeInstanceOf(SourceExistsError);
      await app.replication.removeSource('coll');
    });

    it('removes a source and its mirror under its lease', async () => {
      const upstream = Upstream.create();
      const source = await app.replication.addSource({ url: upstream.bare, name: 'doomed' });
      const status = await app.replication.sync(source.name);
      expect(existsSync(status.registry.mirrorPath!)).toBe(true);
      await app.replication.removeSource(source.name);
      expect(existsSync(status.registry.mirrorPath!)).toBe(false);
      await expect(app.replication.getSource(source.name)).rejects.toThrow(/no source named/);
      expect(readdirSync(config.mirrorsDir).some((entry) => entry.startsWith('doomed'))).toBe(false);
      execFileSync('git', ['--version']);
    });
  });
}
