// The proof of distributed mode on one machine: 1 api + 3 workers (shards a,
// b, c) + 1 scheduler as separate `forgesync serve` processes on a private
// PostgreSQL and a private Redis, 200 sources on local smart-HTTP upstreams,
// pushes and signed webhooks arriving throughout. Meanwhile: worker a is
// SIGKILLed mid-sync and restarted; worker c is SIGSTOPped mid-sync for longer
// than the lease ttl while its shard is drained (so others take its leases and
// flip the placement), then SIGCONTed: its late writes must be refused; Redis
// is restarted with its state lost, then PostgreSQL. At the end every mirror
// equals its upstream, every recorded request was served, no refused write was
// applied and no source lives on two shards; the counts are printed.
// Needs dist/ (npm run build): the processes run bin/forgesync.js. FORGESYNC_TEST_PROOF_KEEP=1
// keeps the temp dir (every process's log, the shards' storage) for a look after a failure.
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { refsOf } from '../support/harness.js';
import { eventually as until } from '../support/eventually.js';
import { LOOPBACK_NETWORKS } from '../support/egress.js';
import { testSecret } from '../support/secrets.js';
import { Pusher, UpstreamFleet, WebhookSender } from '../support/cluster/fleet.js';
import { ForgesyncProcess, forgesyncCli, requireBuilt } from '../support/cluster/processes.js';
import { RegistryView, type SourceRow } from '../support/cluster/registry.js';
import { PostgresInstance, RedisInstance } from '../support/cluster/services.js';

const SOURCES = 200;
const SHARDS = ['a', 'b', 'c'] as const;
const TTL_MS = 3_000;
const ADMIN_TOKEN = testSecret('PROOF_ADMIN_TOKEN');
const WEBHOOK_SECRET = testSecret('PROOF_WEBHOOK_SECRET');
const CLUSTER_TOKEN = testSecret('PROOF_CLUSTER_TOKEN');

const caughtUp = (row: SourceRow) => row.state === 'synced' && row.completedSeq >= row.requestedSeq && row.moveTo === null;
const indexOf = (name: string) => Number(name.slice(1));

describe('distributed mode on one machine: processes, shards and fences under crashes, stops, drains and backend restarts', () => {
  let root: string;
  let redis: RedisInstance | undefined;
  let postgres: PostgresInstance | undefined;
  let fleet: UpstreamFleet | undefined;
  let registry: RegistryView | undefined;
  const processes: ForgesyncProcess[] = [];

  beforeAll(async () => {
    requireBuilt();
    root = mkdtempSync(join(tmpdir(), 'forgesync-proof-'));
    // One at a time, each assigned as soon as it runs, so afterAll stops whatever started before a failure.
    redis = await RedisInstance.start();
    postgres = await PostgresInstance.start();
    fleet = await UpstreamFleet.create(join(root, 'upstreams'), SOURCES);
    registry = new RegistryView(postgres.url);
  }, 120_000);

  afterAll(async () => {
    await Promise.all(processes.map((child) => child.stop()));
    await registry?.close();
    await fleet?.close();
    await redis?.stop();
    await postgres?.stop();
    // FORGESYNC_TEST_PROOF_KEEP=1 keeps the processes' logs and data for a look after a failure.
    if (root && process.env.FORGESYNC_TEST_PROOF_KEEP) console.log(`cluster proof: kept ${root}`);
    else if (root) rmSync(root, { recursive: true, force: true });
  }, 60_000);

  it('keeps every mirror equal to its upstream and refuses every late write', async () => {
    const started = Date.now();
    const db = registry!;
    const upstreams = fleet!;
    const env = (name: string, extra: Record<string, string> = {}) => {
      const dataDir = join(root, name);
      mkdirSync(dataDir, { recursive: true });
      return {
        FORGESYNC_DATA_DIR: dataDir,
        FORGESYNC_DATABASE_URL: postgres!.url,
        FORGESYNC_LEASE_URL: redis!.url,
        FORGESYNC_JOBS_URL: `${redis!.url}/0?prefix=proof`,
        FORGESYNC_LEASE_TTL: `${TTL_MS / 1000}s`,
        FORGESYNC_SCHEDULER_TICK: '200ms',
        FORGESYNC_RETRY_BASE: '1s',
        FORGESYNC_RETRY_MAX: '5s',
        FORGESYNC_GIT_PROTOCOLS: 'http',
        FORGESYNC_ALLOW_NETWORKS: LOOPBACK_NETWORKS,
        FORGESYNC_ADMIN_TOKEN: ADMIN_TOKEN,
        FORGESYNC_GITHUB_WEBHOOK_SECRET: WEBHOOK_SECRET,
        FORGESYNC_CLUSTER_TOKEN: CLUSTER_TOKEN,
        ...extra,
      };
    };
    const serve = (name: string, args: string[], extra: Record<string, string> = {}) => {
      const child = new ForgesyncProcess(name, args, env(name, extra), join(root, `${name}.log`));
      processes.push(child);
      return child;
    };

    // The api first: it runs the migrations, before the others open the same database.
    const api = serve('api', ['--role', 'api', '--port', '0', '--host', '127.0.0.1']);
    const apiUrl = (await api.start())!;
    const workers = Object.fromEntries(SHARDS.map((id) => [id, serve(`worker-${id}`, ['--role', 'worker'], { FORGESYNC_SHARD: id })])) as Record<(typeof SHARDS)[number], ForgesyncProcess>;
    const scheduler = serve('scheduler', ['--role', 'scheduler']);
    await Promise.all([...Object.values(workers).map((worker) => worker.start()), scheduler.start()]);

    // 200 sources through the API, placed on the three shards as they are added.
    for (let i = 0; i < SOURCES; i += 8) {
      await Promise.all(
        Array.from({ length: Math.min(8, SOURCES - i) }, async (_, k) => {
          const response = await fetch(`${apiUrl}/api/sources`, {
            method: 'POST',
            headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
            body: JSON.stringify({ url: upstreams.url(i + k), name: upstreams.name(i + k) }),
          });
          expect(response.status, await response.clone().text()).toBe(201);
        }),
      );
    }
    const placed = await db.sources();
    expect(new Set(placed.map((row) => row.shard))).toEqual(new Set(SHARDS));
    await until('the first sync of every source', async () => (await db.sources()).every(caughtUp), 150_000, 500);

    const hooks = new WebhookSender(apiUrl, WEBHOOK_SECRET);
    const pusher = new Pusher(upstreams, hooks, 250);
    pusher.start();

    /** Makes syncs of shard `shard` slow, pushes to them and waits until some are in flight (rows `started`). */
    const inFlightOn = async (shard: string) => {
      const rows = (await db.sources()).filter((row) => row.shard === shard && row.moveTo === null).slice(0, 12);
      for (const row of rows) upstreams.slow.add(`${row.name}.git`);
      await Promise.all(rows.map(async (row) => hooks.send(upstreams, indexOf(row.name), await upstreams.push(indexOf(row.name)))));
      // Only the slowed ones: a fast sync seen started could finish before the signal lands.
      const slowed = new Set(rows.map((row) => row.id));
      return until(`syncs in flight on shard ${shard}`, async () => {
        const rowsStarted = (await db.startedOn(shard)).filter((row) => slowed.has(row.sourceId));
        return rowsStarted.length >= 2 ? rowsStarted : null;
      }, 30_000, 20);
    };

    // 1. SIGKILL worker a mid-sync, then start it again on the same storage.
    const killedInFlight = await inFlightOn('a');
    await workers.a.crash();
    upstreams.slow.clear();
    await workers.a.start();

    // 2. SIGSTOP worker c mid-sync, drain its shard meanwhile (a and b take its leases once they
    //    expire, sync its sources and flip their placement), then SIGCONT it.
    const stoppedInFlight = await inFlightOn('c');
    workers.c.signal('SIGSTOP');
    const stoppedAt = Date.now();
    upstreams.slow.clear();
    const drain = JSON.parse(await forgesyncCli(['shard', 'drain', 'c', '--wait', '--timeout', '150', '--json'], env('cli'), 180_000)) as { moving: number };
    const stoppedMs = Date.now() - stoppedAt;
    workers.c.signal('SIGCONT');
    expect(drain.moving).toBeGreaterThan(0);
    expect(stoppedMs).toBeGreaterThan(TTL_MS);
    // Each sync c had in flight wakes up with an outdated fence and placement: it ends `lease lost`
    // (recorded on its attempt), and what it writes to the source's row is refused: the row stays the
    // new holder's (its fence, its shard, the next epoch, a mirror outside c's storage). c usually sees
    // its lease lapsed before it writes (the lease's own deadline), and then only its fenced release
    // of the row reaches the registry; a write already under way when stopped is refused by the fence.
    await until('the late writes of worker c refused', async () => {
      const refused = await db.refusedAttempts();
      return stoppedInFlight.every((row) => refused.some((attempt) => attempt.sourceId === row.sourceId && attempt.fence === row.fence));
    }, 30_000);
    const cDir = (await db.shardDirs()).get('c')!;
    const afterWake = new Map((await db.sources()).map((row) => [row.id, row]));
    const staleApplied = stoppedInFlight.filter((stale) => {
      const row = afterWake.get(stale.sourceId)!;
      return row.shard === 'c' || row.epoch < 1 || row.fence === null || row.fence <= stale.fence || row.mirrorPath === null || row.mirrorPath.startsWith(`${cDir}/`);
    });
    expect(staleApplied).toEqual([]);

    // 3. Redis restarted, its state lost (leases, their fence counters, the queued jobs); then 4. PostgreSQL.
    for (const service of [redis!, postgres!]) {
      const at = Date.now();
      await service.restart();
      await until(`syncs served after restarting ${service === redis ? 'Redis' : 'PostgreSQL'}`, async () => (await db.servedSince(at)) >= 20, 90_000, 250);
    }

    await pusher.stop();
    const rows = await until('every recorded request served', async () => {
      const all = await db.sources();
      return all.every(caughtUp) ? all : null;
    }, 120_000, 500);

    // Every process is still up (a was restarted, on purpose, once), and none logged a fatal error.
    expect(processes.map((child) => child.starts)).toEqual([1, 2, 1, 1, 1]);
    expect(processes.filter((child) => !child.running).map((child) => child.name)).toEqual([]);
    expect(processes.flatMap((child) => child.fatalLines())).toEqual([]);
    expect(rows).toHaveLength(SOURCES);

    // Every mirror equals its upstream.
    const unequal = rows.filter((row) => row.mirrorPath === null || refsOf(row.mirrorPath) !== refsOf(upstreams.bare(indexOf(row.name))));
    expect(unequal.map((row) => row.name)).toEqual([]);

    // One shard per source: placed on a or b (c is drained), its mirror in that shard's storage, and
    // `forgesync status` (what the api process's registry reads say) agrees.
    const dirs = await db.shardDirs();
    const misplaced = rows.filter((row) => row.shard === null || row.shard === 'c' || !row.mirrorPath!.startsWith(`${dirs.get(row.shard)}/`));
    expect(misplaced.map((row) => `${row.name}@${row.shard}:${row.mirrorPath}`)).toEqual([]);
    const status = JSON.parse(await forgesyncCli(['status', '--json'], env('cli'))) as { name: string; shard: string | null }[];
    const statusShards = new Map(status.map((entry) => [entry.name, entry.shard]));
    expect(statusShards.size).toBe(SOURCES);
    expect(rows.filter((row) => statusShards.get(row.name) !== row.shard).map((row) => row.name)).toEqual([]);
    const shards = JSON.parse(await forgesyncCli(['shard', 'list', '--json'], env('cli'))) as { id: string; state: string; sources: number }[];
    expect(shards.map((shard) => [shard.id, shard.state])).toEqual([['a', 'active'], ['b', 'active'], ['c', 'draining']]);
    expect(shards.map((shard) => shard.sources)).toEqual([rows.filter((row) => row.shard === 'a').length, rows.filter((row) => row.shard === 'b').length, 0]);

    // Reads that need the files, asked of the api (which has none), are answered by each source's shard.
    const forwarded = await Promise.all(['a', 'b'].map(async (shard) => {
      const row = rows.find((candidate) => candidate.shard === shard)!;
      const response = await fetch(`${apiUrl}/api/sources/${row.name}/contents?ref=HEAD`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } });
      const body = (await response.json()) as { type?: string; message?: string };
      return { shard, status: response.status, type: body.type ?? body.message };
    }));
    expect(forwarded).toEqual([{ shard: 'a', status: 200, type: 'tree' }, { shard: 'b', status: 200, type: 'tree' }]);

    // Refused writes were counted, and none was applied: each refused source's row carries a newer
    // fence than the refused write, and the sources c held were moved under a new epoch.
    const refused = await db.refusedAttempts();
    const byId = new Map(rows.map((row) => [row.id, row]));
    const applied = refused.filter((attempt) => attempt.fence === null || !(byId.get(attempt.sourceId)!.fence! > attempt.fence));
    expect(refused.length).toBeGreaterThan(0);
    expect(applied).toEqual([]);
    expect(stoppedInFlight.filter((row) => byId.get(row.sourceId)!.epoch < 1)).toEqual([]);
    const lostOnC = workers.c.lines().filter((line) => line.event === 'sync' && line.result === 'lost').length;
    expect(lostOnC).toBeGreaterThanOrEqual(stoppedInFlight.length);

    const counts = {
      sources: rows.length,
      processes: processes.length,
      syncAttempts: await db.attempts(),
      pushes: upstreams.pushes,
      webhooksAccepted: hooks.accepted,
      webhooksRetried: hooks.retried,
      requestsRecorded: rows.reduce((sum, row) => sum + row.requestedSeq, 0),
      requestsUnserved: rows.filter((row) => row.completedSeq < row.requestedSeq).length,
      inFlightWhenKilled: killedInFlight.length,
      inFlightWhenStopped: stoppedInFlight.length,
      stoppedMs,
      drainedFromC: drain.moving,
      refusedWrites: refused.length,
      // Refused by the registry's fence at the write, and aborted first because the lease was seen to lapse (its fenced release then refused).
      refusedAtWrite: refused.filter((attempt) => attempt.error === 'lease lost: another holder took over').length,
      abortedOnLapse: refused.filter((attempt) => attempt.error !== 'lease lost: another holder took over').length,
      refusedLoggedByC: lostOnC,
      refusedWritesApplied: applied.length,
      mirrorsEqual: rows.length - unequal.length,
      forwardedReads: forwarded.length,
      sourcesOnTwoShards: misplaced.length,
      durationS: Math.round((Date.now() - started) / 1000),
    };
    console.log(`cluster proof: ${Object.entries(counts).map(([key, value]) => `${key}=${value}`).join(' ')}`);
  }, 240_000);
});
