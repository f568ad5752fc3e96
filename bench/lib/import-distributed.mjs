// bench/import.mjs's measurements in distributed mode: `forgesync serve`
// processes (1 api, N workers, 1 scheduler) on a private PostgreSQL and a
// private Redis (BullMQ jobs), started, driven and judged by the proof's own
// machinery (test/support/cluster/import-cluster.ts, compiled to dist-test/
// by tsconfig.fake.json), so the bench and test/cluster/import-proof.test.ts
// run the same cluster and the same chaos.
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { cpuSeconds } from './util.mjs';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const { ImportChaos, ImportCluster, requestCost } = await import(join(ROOT, 'dist-test/test/support/cluster/import-cluster.js'));
const { requireBuilt } = await import(join(ROOT, 'dist-test/test/support/cluster/processes.js'));
const { RegistryView } = await import(join(ROOT, 'dist-test/test/support/cluster/registry.js'));
const { PostgresInstance, RedisInstance } = await import(join(ROOT, 'dist-test/test/support/cluster/services.js'));
const { expectedCounts, importedCounts } = await import(join(ROOT, 'dist-test/test/importer/counts.js'));
const { prng } = await import(join(ROOT, 'dist-test/test/fake-github/index.js'));
const { openLeaseManager } = await import(join(ROOT, 'dist/index.js'));

/** The proof's lease ttl and stop: the stopped worker sleeps past its leases. */
const TTL_MS = 3_000;
const STOP_MS = 7_000;
const secret = () => randomBytes(18).toString('hex');

/**
 * A private PostgreSQL and Redis for every cluster of the bench (never the
 * machine's shared ones: other tests run on those). Each cluster gets a
 * database of its own and an empty Redis (restarted), so no lease, job or
 * stored profile carries over from one run to the next.
 */
export async function openServices() {
  requireBuilt();
  const redis = await RedisInstance.start();
  const postgres = await PostgresInstance.start().catch(async (error) => {
    await redis.stop();
    throw error;
  });
  const admin = new RegistryView(postgres.url);
  let databases = 0;
  return {
    /** A fresh database's URL, Redis emptied. */
    async fresh() {
      const database = `bench_import_${++databases}`;
      await admin.query(`create database ${database}`);
      await redis.restart();
      return { databaseUrl: postgres.url.replace(/\/postgres$/, `/${database}`), redisUrl: redis.url };
    },
    redisUrl: redis.url,
    async close() {
      await admin.close();
      await redis.stop();
      await postgres.stop();
    },
  };
}

/** Runs `body(cluster)` on a started cluster of `shards.length` workers, then stops it and removes its dir (kept on failure, and with BENCH_KEEP). */
async function withCluster(services, { shards, githubToken, credentials }, body) {
  const root = mkdtempSync(join(tmpdir(), 'forgesync-bench-import-cluster-'));
  const cluster = new ImportCluster({ root, ...(await services.fresh()), jobsPrefix: 'benchimport', shards, ttlMs: TTL_MS, adminToken: secret(), clusterToken: secret(), githubToken, credentials });
  let keep = Boolean(process.env.BENCH_KEEP);
  try {
    await cluster.start();
    return await body(cluster);
  } catch (error) {
    keep = true;
    throw new Error(`${error.message} (the processes' logs are in ${root})`, { cause: error });
  } finally {
    await cluster.stop();
    if (keep) console.error(`kept ${root}`);
    else rmSync(root, { recursive: true, force: true });
  }
}

/**
 * How long the per-object jobs the workers share took, from the fake's log:
 * the span of the pull request calls (object and reviews, one job per pull
 * request) plus that of the profile calls (one per user), the two fan-out
 * stages of this project; what
 * is left of the wall time is the coordinator's walk of the lists and the
 * steps between stages, which more workers cannot shorten.
 */
function fanOutMs(requests) {
  const span = (...kinds) => {
    const times = requests.filter((entry) => kinds.includes(entry.pathKind)).map((entry) => entry.at);
    return times.length ? Math.max(...times) - Math.min(...times) : 0;
  };
  // A pull request's job asks its single object (`pull`) and its reviews.
  return span('pull', 'reviews') + span('user');
}

/** Requests in flight per worker in the scaling runs (the default concurrency of one process). */
const PER_WORKER_CONCURRENCY = 20;

const shardIds = (count) => Array.from({ length: count }, (_, index) => String.fromCharCode(97 + index));

/**
 * Wall time of one full import of `fake`'s project (from the POST to the
 * status `synced` with every object) on a cluster of `workers` workers, once
 * per entry of `workerCounts`; every import on a fresh database. An import's
 * concurrency is what it has in flight in all its workers, so each run asks
 * for PER_WORKER_CONCURRENCY per worker: the same load on every worker, as an
 * operator who adds workers to import faster would ask for.
 */
export async function measureScaling(services, { fake, githubToken, workerCounts, timeoutMs, onProgress = () => {} }) {
  const expected = expectedCounts(fake);
  const runs = [];
  for (const workers of workerCounts) {
    onProgress(`scaling: ${workers} worker${workers === 1 ? '' : 's'}`);
    runs.push(
      await withCluster(services, { shards: shardIds(workers), githubToken, credentials: { GH: fake } }, async (cluster) => {
        fake.clearLog();
        const started = performance.now();
        const name = await cluster.startImport(fake, { credentials: ['GH'], concurrency: PER_WORKER_CONCURRENCY * workers });
        const final = await cluster.untilSyncedWith(name, expected, timeoutMs);
        const ms = performance.now() - started;
        const cpu = cluster.processes.map((child) => cpuSeconds(child.child?.pid));
        return { workers, ms, fanOutMs: fanOutMs(fake.requests), forgesyncCpuS: cpu.includes(null) ? null : cpu.reduce((sum, n) => sum + n, 0), importDurationS: final.durationS, counted: fake.stats().counted, countsExact: JSON.stringify(importedCounts(final)) === JSON.stringify(expected) };
      }),
    );
  }
  return runs;
}

/**
 * The proof's run without the feed and without the scheduler kill: 3 workers;
 * a clean import of the project (from `cleanFake`, a fake of its own, so no
 * profile is shared) whose counted requests are the budget; then the same
 * project imported from `fake` while three random workers are SIGKILLed and
 * started again and the coordinator's worker is SIGSTOPped for 7 s (ttl
 * 3 s), each at a random point of the import's progress.
 */
export async function measureChaos(services, { fake, cleanFake, githubToken, seed, timeoutMs, onProgress = () => {} }) {
  return withCluster(services, { shards: shardIds(3), githubToken, credentials: { GH: fake, GH_CLEAN: cleanFake } }, async (cluster) => {
    onProgress('chaos: the clean import');
    const cleanStarted = performance.now();
    await cluster.startImport(cleanFake, { name: 'clean', credentials: ['GH_CLEAN'] });
    const clean = await cluster.untilSyncedWith('clean', expectedCounts(cleanFake), timeoutMs);
    const cleanMs = performance.now() - cleanStarted;
    const budget = cleanFake.stats().counted;

    onProgress('chaos: the import under kills and a stop');
    const leases = await openLeaseManager(services.redisUrl);
    try {
      const started = performance.now();
      const name = await cluster.startImport(fake, { credentials: ['GH'] });
      const chaos = new ImportChaos({ processes: cluster, fake, budget, importName: name, leases, random: prng(seed), stopMs: STOP_MS });
      const driver = Promise.all([chaos.killWorker(0.05, 0.15), chaos.stopCoordinator(0.15, 0.3), chaos.killWorker(0.45, 0.6), chaos.killWorker(0.6, 0.75)]);
      const expected = expectedCounts(fake);
      const final = await cluster.untilSyncedWith(name, expected, timeoutMs).catch(async (error) => {
        chaos.end();
        await driver.catch(() => undefined);
        throw new Error(`${error.message}; chaos ${chaos.steps.join(' ')}`);
      });
      chaos.end();
      await driver;
      const ms = performance.now() - started;
      const cost = requestCost(fake, budget);
      return {
        seed,
        chaos: chaos.steps,
        budget,
        counted: cost.counted,
        ratio: cost.ratio,
        refetched: cost.refetched,
        countsExact: JSON.stringify(importedCounts(final)) === JSON.stringify(expected),
        failuresListed: final.failures.filter((failure) => !/404/.test(failure.error)).length,
        cleanCountsExact: JSON.stringify(importedCounts(clean)) === JSON.stringify(expectedCounts(cleanFake)),
        cleanMs,
        ms,
      };
    } finally {
      await leases.close();
    }
  });
}
