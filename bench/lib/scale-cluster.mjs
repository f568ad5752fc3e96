// The distributed cluster of bench/scale.mjs's process measurements: a
// PostgreSQL database of its own, a Redis database for leases and a BullMQ
// queue prefix of its own, N bare upstreams on local paths, the sources added
// through the library, and `forgesync serve --role …` child processes on them.
// Everything it creates is removed by close().
import { randomBytes } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import os from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { pino } from 'pino';
import { Forgesync, loadConfig, openLeaseManager } from '../../dist/index.js';
import { createLogger } from '../../dist/logging/logger.js';
import { createTemplate, createUpstreams, pool } from './git-fleet.mjs';
import { connectRedis, deleteMatching } from './redis.mjs';
import { startServe, stop } from './webhooks-procs.mjs';

/** The shard every worker serves (see "one shard" in bench/scale.mjs's header). */
export const SHARD = 'bench';

/**
 * Opens the cluster's backends and fixtures: `options` = { root, postgresUrl,
 * redisUrl, sources, leaseTtl, schedulerTick, secret }. The workers are
 * started by the caller (startWorker) so the first one's registration places the sources.
 */
export async function openCluster(options) {
  const { root, postgresUrl, redisUrl, sources: count } = options;
  const suffix = `${process.pid}_${randomBytes(3).toString('hex')}`;
  const database = `forgesync_bench_scale_${suffix}`;
  // Lease keys cannot be prefixed (forgesync:lease:{sync:repository:<id>}) and a fresh database
  // numbers its sources from 1 again: the Redis database must be this bench's own. It is emptied
  // of forgesync's lease keys before and after, so fences left by an earlier run do not linger.
  const redis = await connectRedis(redisUrl); // fails fast when Redis is not there
  await deleteMatching(redis, 'forgesync:*');
  const admin = new pg.Client({ connectionString: postgresUrl });
  try {
    await admin.connect();
    await admin.query(`CREATE DATABASE ${database}`);
  } catch (error) {
    redis.disconnect();
    await admin.end().catch(() => {});
    throw error;
  }
  const databaseUrl = Object.assign(new URL(postgresUrl), { pathname: `/${database}` }).toString();
  const registry = new pg.Pool({ connectionString: databaseUrl, max: 2 });
  registry.on('error', () => {});
  const jobsPrefix = `bench-scale-${suffix}`;
  const jobsUrl = `${redisUrl}${redisUrl.includes('?') ? '&' : '?'}prefix=${jobsPrefix}`;

  const env = {
    FORGESYNC_DATABASE_URL: databaseUrl,
    FORGESYNC_LEASE_URL: redisUrl,
    FORGESYNC_JOBS_URL: jobsUrl,
    FORGESYNC_CLUSTER_TOKEN: randomBytes(16).toString('hex'),
    FORGESYNC_ADMIN_TOKEN: randomBytes(16).toString('hex'),
    FORGESYNC_GITHUB_WEBHOOK_SECRET: options.secret,
    FORGESYNC_GIT_PROTOCOLS: 'file',
    FORGESYNC_LEASE_TTL: options.leaseTtl,
    FORGESYNC_SCHEDULER_TICK: options.schedulerTick,
    FORGESYNC_SHARD: SHARD,
    FORGESYNC_LOG_LEVEL: 'info',
  };
  const workerDir = join(root, 'worker'); // every worker's: one shard, one storage root
  const children = new Set();
  let library;
  let leases;
  let logs = 0;
  let redisPid;

  const cluster = {
    upstreams: [],
    names: [],
    workers: [],
    /** Starts `forgesync serve --role <role>` with its own log file; `dataDir` defaults to the role's own directory. */
    async start(role, dataDir = join(root, role), nodeArgs = []) {
      mkdirSync(dataDir, { recursive: true });
      const logFile = join(root, `${role}-${++logs}.log`);
      const proc = await startServe({ ...env, FORGESYNC_ROLE: role, FORGESYNC_DATA_DIR: dataDir }, logFile, nodeArgs);
      children.add(proc.child);
      proc.child.once('exit', () => children.delete(proc.child));
      return proc;
    },
    /** Starts one more worker on the shared shard; resolves once it has registered and serves. */
    async startWorker() {
      const worker = await cluster.start('worker', workerDir);
      cluster.workers.push(worker);
      return worker;
    },
    /** Stops workers (SIGTERM) until `count` are left. */
    async keepWorkers(count) {
      while (cluster.workers.length > count) await stop(cluster.workers.pop().child);
    },
    /** Removes a worker from the list (after a SIGKILL). */
    forget(worker) {
      cluster.workers = cluster.workers.filter((w) => w !== worker);
    },
    /** The bench's own library instance: requests syncs as `forgesync sync` or the API would. */
    library: () => library,
    /** Lease holders of the sources' sync leases right now. */
    syncHolders: () => leases.list('sync:repository:'),
    query: (text, values) => registry.query(text, values).then((r) => r.rows),
    /** The pids of the PostgreSQL backends serving the run's database, and of redis-server (same machine). */
    async backendPids() {
      const rows = await cluster.query(`select pid from pg_stat_activity where datname = current_database()`);
      // redis-server's pid does not change: asked once.
      redisPid ??= Number(/process_id:(\d+)/.exec(await redis.info('server'))?.[1]);
      return { postgres: rows.map((r) => r.pid), redis: redisPid };
    },
    /** Rows caught up: synced and every request served. */
    async caughtUp() {
      const [row] = await cluster.query(
        `select count(*) filter (where state = 'synced' and completed_seq >= requested_seq)::int as done,
                count(*) filter (where state = 'failed')::int as failed, count(*)::int as n from registry`,
      );
      return row;
    },
    /**
     * Waits until every row is caught up; throws on a failed row (unless `ignoreFailed`: then
     * those count as done, they wait for a retry) or after `timeoutMs`.
     */
    async waitCaughtUp(timeoutMs = 180_000, pollMs = 20, { ignoreFailed = false } = {}) {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const { done, failed, n } = await cluster.caughtUp();
        if (ignoreFailed && done + failed === n) return;
        if (failed > 0 && !ignoreFailed) {
          const rows = await cluster.query(`select s.name, r.last_failure from registry r join sources s on s.id = r.source_id where r.state = 'failed' limit 3`);
          throw new Error(`${failed} source(s) failed: ${rows.map((r) => `${r.name}: ${r.last_failure}`).join('; ')}`);
        }
        if (done === n) return;
        if (Date.now() > deadline) throw new Error(`only ${done}/${n} sources caught up within ${timeoutMs} ms; see ${root}`);
        await sleep(pollMs);
      }
    },
    /** Stops every child left (SIGTERM, SIGKILL after 5 s), drops the database and the Redis keys. */
    async close() {
      await Promise.all([...children].map((child) => stop(child, 5000)));
      await library?.close().catch(() => {});
      await leases?.close().catch(() => {});
      await registry.end().catch(() => {});
      await deleteMatching(redis, 'forgesync:*').catch(() => {});
      await deleteMatching(redis, `${jobsPrefix}:*`).catch(() => {});
      await redis.quit().catch(() => redis.disconnect());
      await admin.query(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`).catch(() => {});
      await admin.end().catch(() => {});
    },
  };

  try {
    const template = await createTemplate(join(root, 'template.git'));
    mkdirSync(join(root, 'upstreams'));
    cluster.upstreams = await createUpstreams(template, join(root, 'upstreams'), count, os.cpus().length * 2);
    cluster.names = cluster.upstreams.map((_, i) => `repo-${String(i).padStart(4, '0')}`);
    // The library opens the registry (migrating it) with the processes' settings; it runs no role.
    const libraryDir = join(root, 'library');
    library = await Forgesync.open(loadConfig({ cwd: root, env: { ...env, FORGESYNC_DATA_DIR: libraryDir } }), {
      logger: createLogger({ level: 'warn', destination: pino.destination({ dest: join(root, 'library.log'), mkdir: true }) }),
    });
    // No shard is active yet: the sources stay unplaced until the first worker registers.
    await pool(cluster.upstreams, 8, (url, i) => library.replication.addSource({ url, name: cluster.names[i] }));
    leases = await openLeaseManager(redisUrl);
  } catch (error) {
    await cluster.close();
    throw error;
  }
  return cluster;
}

/** Requests a sync of every source through the library, `parallel` at a time (the API's and webhooks' path). */
export function requestAll(cluster, parallel = 8) {
  return pool(cluster.names, parallel, (name) => cluster.library().replication.requestSync(name, { trigger: 'manual' }));
}
