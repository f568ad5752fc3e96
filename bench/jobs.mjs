#!/usr/bin/env node
// Job transport throughput and latency: forgesync's BullMQ transport vs raw BullMQ
// (Queue.add + Worker) on the same Redis, with the in-process transport for reference.
//
//   npm run bench:jobs                build, then: node --expose-gc bench/jobs.mjs
//   BENCH_QUICK=1                     one short round (smoke test)
//   BENCH_JOBS=20000                  jobs per measurement
//   BENCH_ROUNDS=5                    measured rounds (median shown)
//   BENCH_CONCURRENCY=16              handler concurrency (one worker, this process)
//   BENCH_PRODUCERS=32                enqueues in flight (async producer loops)
//   BENCH_REDIS_URL                   default redis://127.0.0.1:6379/9 (no query: the run adds ?prefix=)
//   BENCH_STRICT=1                    exit 1 when the goal is missed
//
// Method (the same for every contender):
//  - one process produces and consumes: BENCH_PRODUCERS async loops enqueue BENCH_JOBS jobs
//    with distinct keys (so nothing coalesces), each loop awaiting its
//    enqueue before the next; one worker with BENCH_CONCURRENCY runs no-op handlers.
//  - a job carries performance.now() taken just before its enqueue; latency = handler start
//    minus that. Throughput = jobs / (last handler start - first enqueue).
//  - forgesync: openBullmqTransport and transport.enqueue() of jobs without a fairness bucket:
//    deduplication by key with keepLastIfActive (the coalescing every job needs),
//    removeOnComplete/removeOnFail; its Worker runs the handlers;
//    forgesync-buckets (reference): the same with four fairness buckets in turn, so every job
//    also gets a priority (its round, fairness.ts);
//    raw: new Queue / new Worker with default options, queue.add(name, data, { removeOnComplete: true });
//    raw+opts (reference): raw with the job options forgesync uses (priority, deduplication with
//    keepLastIfActive, removeOnFail), to tell BullMQ's cost of those features from forgesync's own;
//    in-process: InProcessTransport (no Redis at all; for scale, no goal).
//  - every contender gets a fresh queue per measurement, under one prefix unique to the run
//    on db 9; the keys are deleted at the end. A warm-up measurement of each first, then
//    BENCH_ROUNDS rounds in an order rotated per round, with a forced GC before each.
//    The goal (forgesync ≥ 0.8× raw throughput) is judged on the median of the per-round ratios.
// Results also go to bench/results/jobs.json.

import { randomBytes } from 'node:crypto';
import os from 'node:os';
import { performance } from 'node:perf_hooks';
import { Queue, Worker } from 'bullmq';
import { Redis } from 'ioredis';
import { pino } from 'pino';
import { openBullmqTransport } from '../dist/jobs/bullmq/transport.js';
import { InProcessTransport } from '../dist/jobs/in-process.js';
import { collectGarbage, median, rotate, spreadPct, withDeadline } from './lib/harness.mjs';
import { GOAL_VS_RAW } from './lib/report.mjs';
import { describeError, intSetting, loads, log, progress, quick, redactUrl, reportLoad, table, unreachable, writeResults } from './lib/util.mjs';

const env = process.env;
const cfg = {
  quick,
  jobs: intSetting('BENCH_JOBS', quick ? 2000 : 20_000, 10),
  rounds: intSetting('BENCH_ROUNDS', quick ? 1 : 5, 1),
  warmupJobs: quick ? 500 : 3000,
  concurrency: intSetting('BENCH_CONCURRENCY', 16, 1),
  producers: intSetting('BENCH_PRODUCERS', 32, 1),
};
const baseUrl = env.BENCH_REDIS_URL ?? 'redis://127.0.0.1:6379/9';
const runId = `${process.pid.toString(36)}${randomBytes(3).toString('hex')}`;
const prefix = `fsbench-jobs-${runId}`;
const logger = pino({ level: 'warn' }, pino.destination(2));

/** A client for INFO and the cleanup, connected, or an "unreachable" error within ~2 s. */
async function connectAdmin(url) {
  const client = new Redis(url, { lazyConnect: true, connectTimeout: 2000, maxRetriesPerRequest: 1, retryStrategy: () => null });
  let firstError;
  client.on('error', (error) => (firstError ??= error));
  try {
    await withDeadline(client.connect(), 2500, `connecting to ${redactUrl(url)}`);
  } catch (error) {
    client.disconnect();
    throw unreachable(firstError ?? error);
  }
  return client;
}

let admin;
/** The Redis server's CPU time so far (user + system), in ms; it counts every client of the server, not only this run. */
async function redisCpuMs() {
  const info = await admin.info('cpu');
  const field = (name) => Number(new RegExp(`^${name}:([0-9.]+)`, 'm').exec(info)?.[1] ?? NaN);
  return (field('used_cpu_user') + field('used_cpu_sys')) * 1000;
}

/** Runs `count` no-op jobs through `contender`; resolves with throughput and latencies. */
async function measure(contender, count, queueName) {
  collectGarbage();
  const latencies = new Float64Array(count);
  let started = 0;
  let lastStart = 0;
  let done;
  const finished = new Promise((resolve) => (done = resolve));
  const onStart = (t) => {
    const now = performance.now();
    latencies[started++] = now - t;
    lastStart = now;
    if (started === count) done();
  };
  const session = await contender.open(queueName, onStart);
  try {
    const redisCpuAtStart = await redisCpuMs();
    const cpuAtStart = process.cpuUsage();
    const first = performance.now();
    let next = 0;
    await Promise.all(
      Array.from({ length: cfg.producers }, async () => {
        while (next < count) {
          const i = next++;
          await session.enqueue(`j${i}`, performance.now());
        }
      }),
    );
    await withDeadline(finished, 120_000, `${contender.name}: ${count} jobs`);
    const elapsedMs = lastStart - first;
    const cpu = process.cpuUsage(cpuAtStart);
    const redisCpu = (await redisCpuMs()) - redisCpuAtStart;
    latencies.sort();
    const at = (q) => latencies[Math.min(count - 1, Math.floor(q * count))];
    return {
      jobs: count,
      elapsedMs,
      jobsPerSec: (count * 1000) / elapsedMs,
      p50Ms: at(0.5),
      p99Ms: at(0.99),
      cpuUsPerJob: (cpu.user + cpu.system) / count,
      redisCpuUsPerJob: (redisCpu * 1000) / count,
    };
  } finally {
    await session.close();
  }
}

const contenders = [
  {
    name: 'in-process',
    describe: 'InProcessTransport, in memory (reference, no goal)',
    async open(kind, onStart) {
      const jobs = new InProcessTransport({ logger });
      jobs.handle(kind, { concurrency: cfg.concurrency, run: async (job) => onStart(job.payload.t) });
      await jobs.start();
      return { enqueue: (key, t) => jobs.enqueue({ kind, key, payload: { t }, fairness: 'bench' }), close: () => jobs.close() };
    },
  },
  forgesyncContender('forgesync', 'forgesync BullMQ transport: enqueue() (coalescing by key) and its Worker, jobs without a fairness bucket', () => undefined),
  forgesyncContender(
    'forgesync-buckets',
    'the same with a fairness bucket per job, four buckets in turn: rounds as BullMQ priorities (reference, no goal)',
    (i) => `host${i % 4}`,
  ),
  rawContender('raw', 'raw BullMQ: Queue.add(name, data, { removeOnComplete: true }) + Worker, default options', () => ({ removeOnComplete: true })),
  // Not a goal: the price of the BullMQ features forgesync needs, apart from forgesync's own code.
  rawContender(
    'raw+opts',
    "raw BullMQ with forgesync's job options: a priority (increasing, as one bucket gets), deduplication " +
      'by key with keepLastIfActive, removeOnComplete and removeOnFail (reference, no goal)',
    (i, key) => ({ priority: i + 1, deduplication: { id: key, keepLastIfActive: true }, removeOnComplete: true, removeOnFail: true }),
  ),
];

/** forgesync's BullMQ transport; `bucket(i)` is the fairness bucket of the i-th job (undefined: none). */
function forgesyncContender(name, describe, bucket) {
  return {
    name,
    describe,
    async open(kind, onStart) {
      const jobs = await openBullmqTransport(`${baseUrl}?prefix=${prefix}`, { logger });
      try {
        jobs.handle(kind, { concurrency: cfg.concurrency, run: async (job) => onStart(job.payload.t) });
        await jobs.start();
      } catch (error) {
        await jobs.close();
        throw error;
      }
      let added = 0;
      return {
        enqueue: (key, t) => {
          const fairness = bucket(added++);
          return jobs.enqueue(fairness === undefined ? { kind, key, payload: { t } } : { kind, key, payload: { t }, fairness });
        },
        close: () => jobs.close(),
      };
    },
  };
}

/** Raw BullMQ: a Queue and a Worker on connections of their own, jobs added with `options(i, key)`. */
function rawContender(name, describe, options) {
  return {
    name,
    describe,
    async open(kind, onStart) {
      // A connection for the producer and one for the worker (which adds its blocking one), as forgesync has.
      const producer = new Redis(baseUrl);
      const connection = new Redis(baseUrl, { maxRetriesPerRequest: null });
      const queue = new Queue(kind, { connection: producer, prefix });
      const worker = new Worker(kind, async (job) => onStart(job.data.t), { connection, prefix, concurrency: cfg.concurrency });
      for (const emitter of [producer, connection, queue, worker]) emitter.on('error', (err) => console.error(`raw BullMQ: ${describeError(err)}`));
      await Promise.all([queue.waitUntilReady(), worker.waitUntilReady()]);
      let added = 0;
      return {
        enqueue: (key, t) => queue.add(kind, { key, t }, options(added++, key)),
        async close() {
          await worker.close();
          await queue.close();
          await Promise.all([producer.quit(), connection.quit()]);
        },
      };
    },
  };
}

async function cleanup() {
  let cursor = '0';
  let deleted = 0;
  do {
    const [next, keys] = await admin.scan(cursor, 'MATCH', `${prefix}:*`, 'COUNT', 1000);
    if (keys.length) deleted += await admin.del(...keys);
    cursor = next;
  } while (cursor !== '0');
  return deleted;
}

const startedAt = performance.now();
log(
  `forgesync job transport benchmark — node ${process.version}, ${os.cpus().length} CPUs (${os.cpus()[0]?.model ?? '?'}), ` +
    `gc ${typeof globalThis.gc === 'function' ? 'forced between measurements' : 'NOT exposed (run with --expose-gc)'}`,
);
log(
  `${cfg.rounds} round(s) × ${cfg.jobs} jobs (median shown), warm-up ${cfg.warmupJobs} jobs; distinct keys, ` +
    `no-op handlers, concurrency ${cfg.concurrency}, ${cfg.producers} enqueues in flight; Redis ${redactUrl(baseUrl)}, prefix ${prefix}`,
);
const loadAtStart = os.loadavg();
log(`load average at start: ${loads(loadAtStart)}`);

let measurements = 0;
const queueName = (c) => `${c.name}-${++measurements}`;
const samples = Object.fromEntries(contenders.map((c) => [c.name, []]));
const sampledLoads = [];
let failure;
process.once('SIGINT', async () => {
  console.error('\ninterrupted: cleaning up');
  if (admin) await cleanup().catch(() => {});
  process.exit(130);
});
try {
  admin = await connectAdmin(baseUrl);
} catch (error) {
  failure = `unreachable: ${describeError(error)}`;
  log(`Redis at ${redactUrl(baseUrl)} is unreachable (${describeError(error)}) — nothing measured; start it with: redis-server --daemonize yes`);
}
if (admin) {
  try {
    for (const c of contenders) {
      progress(`warming up ${c.name}`);
      await measure(c, cfg.warmupJobs, queueName(c));
    }
    for (let r = 0; r < cfg.rounds; r++) {
      for (const c of rotate(contenders, r)) {
        progress(`round ${r + 1}/${cfg.rounds}: ${c.name}`);
        samples[c.name].push(await measure(c, cfg.jobs, queueName(c)));
      }
      sampledLoads.push(os.loadavg()[0]);
    }
    progress('');
  } catch (error) {
    progress('');
    failure = describeError(error);
    log(`run failed: ${failure}`);
  } finally {
    try {
      log(`cleanup: ${await cleanup()} key(s) deleted under ${prefix}`);
    } catch (error) {
      log(`cleanup failed: ${describeError(error)}`);
    }
    await admin.quit().catch(() => admin.disconnect());
  }
}

const summary = {};
for (const c of contenders) {
  const s = samples[c.name];
  if (!s.length) continue;
  const rates = s.map((x) => x.jobsPerSec);
  summary[c.name] = {
    describe: c.describe,
    jobsPerSec: median(rates),
    spreadPct: spreadPct(rates),
    p50Ms: median(s.map((x) => x.p50Ms)),
    p99Ms: median(s.map((x) => x.p99Ms)),
    cpuUsPerJob: median(s.map((x) => x.cpuUsPerJob)),
    redisCpuUsPerJob: median(s.map((x) => x.redisCpuUsPerJob)),
    // Per round, against raw BullMQ measured in the same round.
    vsRaw: samples.raw.length === s.length ? median(s.map((x, r) => x.jobsPerSec / samples.raw[r].jobsPerSec)) : undefined,
    samples: s,
  };
}

const int = (n) => Math.round(n).toLocaleString('en-US');
const ms = (n) => (n < 10 ? n.toFixed(2) : n.toFixed(1));
const pct = (n) => `±${n < 10 ? n.toFixed(1) : Math.round(n)}%`;
let goal;
if (summary.forgesync && summary.raw) {
  log('');
  log(
    table(
      ['contender', 'jobs/s', 'spread', 'p50 ms', 'p99 ms', 'vs raw', 'node µs/job', 'redis µs/job'],
      Object.entries(summary).map(([name, r]) => [
        name,
        int(r.jobsPerSec),
        pct(r.spreadPct),
        ms(r.p50Ms),
        ms(r.p99Ms),
        `${r.vsRaw.toFixed(2)}×`,
        r.cpuUsPerJob.toFixed(1),
        r.redisCpuUsPerJob.toFixed(1),
      ]),
    ),
  );
  log('  ("vs raw" = median over rounds of jobs/s ÷ raw BullMQ jobs/s in the same round; spread = (max - min) / median;');
  log('   latency = enqueue call → handler start, medians over rounds of each round\'s percentile;');
  log('   node µs/job = CPU of this process (producer and worker) per job; redis µs/job = the server\'s CPU per job,');
  log('   which includes any other client of that server: on a shared machine the CPU columns are the steadier figures)');
  for (const [name, r] of Object.entries(summary)) log(`  ${name}: ${r.describe}`);
  const ratio = summary.forgesync.vsRaw;
  goal = { target: GOAL_VS_RAW, ratio, met: ratio >= GOAL_VS_RAW };
  log('');
  log(`forgesync on BullMQ vs raw BullMQ: ${ratio.toFixed(2)}× → goal ≥${GOAL_VS_RAW}× raw ${goal.met ? 'met' : 'NOT met'}`);
}
reportLoad(loadAtStart, sampledLoads);
const totalSec = (performance.now() - startedAt) / 1000;
log(`(${totalSec.toFixed(0)} s)`);

const file = writeResults('jobs', {
  generatedAt: new Date().toISOString(),
  node: process.version,
  platform: `${os.platform()} ${os.release()} ${os.arch()}`,
  cpus: os.cpus().length,
  cpuModel: os.cpus()[0]?.model,
  gcForced: typeof globalThis.gc === 'function',
  settings: { ...cfg, redis: redactUrl(baseUrl) },
  loadAverage: { start: loadAtStart, end: os.loadavg() },
  status: failure ? (admin ? 'failed' : 'skipped') : 'ran',
  ...(failure ? { reason: failure } : {}),
  contenders: summary,
  goal,
  durationSec: totalSec,
});
log(`results written to ${file}`);
if (failure || !goal) process.exitCode = 1;
else if (env.BENCH_STRICT === '1' && !goal.met) process.exitCode = 1;
