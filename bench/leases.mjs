#!/usr/bin/env node
// Lease throughput: forgesync vs the raw client issuing the minimal commands
// itself, and (on Redis) vs the npm peers redis-semaphore and redlock.
//
//   npm run bench:leases              build, then: node --expose-gc bench/leases.mjs
//   BENCH_QUICK=1                     one short round (smoke test)
//   BENCH_BACKENDS=sqlite,redis       pick backends (sqlite, redis, postgres, mysql)
//   BENCH_ROUNDS, BENCH_MS, BENCH_WARMUP_MS, BENCH_WORKERS, BENCH_KEYS, BENCH_TTL_MS   tune
//   BENCH_REDIS_URL, BENCH_POSTGRES_URL, BENCH_MYSQL_URL   (else FORGESYNC_TEST_*_URL, else localhost)
//   BENCH_STRICT=1                    exit 1 when a goal is missed (default: only when no backend ran)
//
// Method (the same for every contender):
//  - sequential: one client takes and releases the same key over and over
//    (a job re-taking its lease), for BENCH_MS after a warm-up; pairs/s.
//  - contended: BENCH_WORKERS async workers in this process try-acquire
//    (never wait) over BENCH_KEYS keys in a fixed round-robin pattern and
//    release at once on success, all through one client (one manager, one
//    connection or pool, as one server process would); successful pairs/s
//    and attempts/s.
//  - apart: the same pattern, but every worker has a client of its own (its
//    own manager and connection), as separate processes would: nothing about
//    the other workers can be known without asking the backend.
//  - in both, a worker whose try failed backs off BENCH_BACKOFF_MS (1 ms)
//    before its next try, as a caller would rather than spin on a held key.
//    redis-semaphore's tryAcquire already sleeps ~1 ms after a failure
//    (setTimeout of its retryInterval, even on its last attempt), so the
//    harness adds nothing for it: every contender's losers wait alike.
//    BENCH_BACKOFF_MS=0 gives the spinning loop (redis-semaphore still sleeps).
//  - every contender is warmed up first; then BENCH_ROUNDS rounds, each
//    measuring every contender once per mode in an order rotated per round,
//    with a forced GC before each measurement; the table shows medians.
//    A measurement lasts 1 s by default: the first tens of milliseconds after
//    a forced GC run at up to half speed (caches and JIT state rebuilt), more
//    so for contenders with more code on their path, and at 300 ms that
//    start-up skewed the ratios by several points.
// Results also go to bench/results/leases.json.

import { randomBytes } from 'node:crypto';
import os from 'node:os';
import { performance } from 'node:perf_hooks';
import { collectGarbage, rotate, runContended, runSequential, withDeadline } from './lib/harness.mjs';
import { MODES, printBackend, summarizeBackend, verdictLine } from './lib/report.mjs';
import { describeError, intSetting, loads, log, progress, quick, redactUrl, writeResults } from './lib/util.mjs';

const env = process.env;

const cfg = {
  quick,
  rounds: intSetting('BENCH_ROUNDS', quick ? 3 : 9, 1),
  durationMs: intSetting('BENCH_MS', quick ? 150 : 1000, 50),
  warmupMs: intSetting('BENCH_WARMUP_MS', quick ? 100 : 300, 0),
  workers: intSetting('BENCH_WORKERS', 8, 1),
  keys: intSetting('BENCH_KEYS', 4, 1),
  backoffMs: intSetting('BENCH_BACKOFF_MS', 1, 0),
  ttlMs: intSetting('BENCH_TTL_MS', 10_000, 1000),
  sequentialKey: 'same key repeatedly (one per contender)',
};

const BACKENDS = {
  sqlite: { open: async (ctx) => (await import('./lib/sqlite.mjs')).openSqlite(ctx), url: 'sqlite:<temp file>' },
  redis: {
    open: async (ctx, url) => (await import('./lib/redis.mjs')).openRedis(ctx, url),
    url: env.BENCH_REDIS_URL ?? env.FORGESYNC_TEST_REDIS_URL ?? 'redis://127.0.0.1:6379',
  },
  postgres: {
    open: async (ctx, url) => (await import('./lib/postgres.mjs')).openPostgres(ctx, url),
    url: env.BENCH_POSTGRES_URL ?? env.FORGESYNC_TEST_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/test',
  },
  mysql: {
    open: async (ctx, url) => (await import('./lib/mysql.mjs')).openMysql(ctx, url),
    url: env.BENCH_MYSQL_URL ?? env.FORGESYNC_TEST_MYSQL_URL ?? 'mysql://root@127.0.0.1:3306/test',
  },
};

const selected = (env.BENCH_BACKENDS ?? Object.keys(BACKENDS).join(','))
  .split(',')
  .map((s) => s.trim().toLowerCase())
  .filter(Boolean);
const unknown = selected.filter((b) => !BACKENDS[b]);
if (unknown.length || selected.length === 0) {
  console.error(`BENCH_BACKENDS: unknown ${unknown.join(', ') || '(empty)'}; choose from ${Object.keys(BACKENDS).join(', ')}`);
  process.exit(2);
}


/** Keys are unique to this run so a concurrent run or test suite never collides with it. */
const runId = `${process.pid.toString(36)}${randomBytes(3).toString('hex')}`;
const keyNamespace = 'fsbench-'; // every bench key starts with it; leftovers of killed runs are swept
const keyPrefix = `${keyNamespace}${runId}`;
const seqKey = (c) => `${keyPrefix}:${c.name}:seq`;
const contendedKeys = (c, mode) => Array.from({ length: cfg.keys }, (_, i) => `${keyPrefix}:${c.name}:${mode}${i}`);

async function measure(contender, mode, durationMs) {
  collectGarbage();
  const run =
    mode === 'sequential'
      ? runSequential(contender.sessions(1)[0], seqKey(contender), durationMs)
      : runContended(
          mode === 'apart' ? contender.apartSessions : contender.sessions(cfg.workers),
          contendedKeys(contender, mode),
          durationMs,
          // What the contender's own tryAcquire already sleeps after a failure counts towards the back-off.
          Math.max(0, cfg.backoffMs - (contender.pausesOnFailureMs ?? 0)),
        );
  return withDeadline(run, durationMs + 30_000, `${contender.name} ${mode}`);
}

/**
 * Gives every contender BENCH_WORKERS more instances of itself, one session
 * each, for the "apart" mode; returns a function closing them.
 */
async function openApartClients(opened, ctx) {
  const extra = [];
  const close = () => Promise.allSettled(extra.map((c) => c.close()));
  try {
    for (const c of opened.contenders) {
      const instances = [];
      for (let w = 0; w < cfg.workers; w++) instances.push(await opened.factories[c.name]({ ...ctx, workers: 1 }));
      extra.push(...instances);
      c.apartSessions = instances.map((i) => i.sessions(1)[0]);
    }
  } catch (error) {
    await close();
    throw error;
  }
  return close;
}

async function benchBackend(name, opened) {
  const { contenders } = opened;
  for (const c of contenders) {
    progress(`${name}: warming up ${c.name}`);
    for (const mode of MODES) await measure(c, mode, cfg.warmupMs);
  }
  const samples = Object.fromEntries(contenders.map((c) => [c.name, Object.fromEntries(MODES.map((m) => [m, []]))]));
  for (let r = 0; r < cfg.rounds; r++) {
    for (const mode of MODES) {
      for (const c of rotate(contenders, r)) {
        progress(`${name}: round ${r + 1}/${cfg.rounds}, ${mode}, ${c.name}`);
        samples[c.name][mode].push(await measure(c, mode, cfg.durationMs));
      }
    }
  }
  progress('');
  return samples;
}

const started = performance.now();
log(
  `forgesync lease benchmark — node ${process.version}, ${os.cpus().length} CPUs (${os.cpus()[0]?.model ?? '?'}), ` +
    `gc ${typeof globalThis.gc === 'function' ? 'forced between measurements' : 'NOT exposed (run with --expose-gc)'}`,
);
log(
  `${cfg.rounds} round(s) × ${cfg.durationMs} ms per measurement (median shown), warm-up ${cfg.warmupMs} ms; ` +
    `sequential: ${cfg.sequentialKey}; contended and apart: ${cfg.workers} workers × ${cfg.keys} keys, try-acquire, ` +
      `${cfg.backoffMs} ms back-off after a failed try; ttl ${cfg.ttlMs} ms`,
);
const loadAtStart = os.loadavg();
log(`load average at start: ${loads(loadAtStart)}`);

const results = {};
let interrupted = false;
let currentCleanup;
process.once('SIGINT', async () => {
  interrupted = true;
  console.error('\ninterrupted: cleaning up');
  await currentCleanup?.().catch(() => {});
  process.exit(130);
});

for (const name of selected) {
  if (interrupted) break;
  const backend = BACKENDS[name];
  const shownUrl = redactUrl(backend.url);
  log('');
  log(`== ${name} (${shownUrl})`);
  let opened;
  const ctx = { ...cfg, keyPrefix, keyNamespace };
  try {
    opened = await withDeadline(backend.open(ctx, backend.url), 20_000, `opening ${name}`);
  } catch (error) {
    const reason = describeError(error);
    if (error?.unreachable || error?.name === 'LeaseBackendUnavailableError') {
      log(`${name}: unreachable at ${shownUrl} (${reason}) — skipped`);
      results[name] = { status: 'skipped', url: shownUrl, reason: `unreachable: ${reason}` };
    } else {
      log(`${name}: setup failed (${reason}) — skipped`);
      results[name] = { status: 'skipped', url: shownUrl, reason: `setup failed: ${reason}` };
    }
    continue;
  }
  opened.url = name === 'sqlite' ? opened.url : shownUrl;
  currentCleanup = opened.cleanup;
  try {
    const closeApart = await withDeadline(openApartClients(opened, ctx), 30_000, `opening ${name} clients per worker`);
    const cleanupBackend = opened.cleanup;
    currentCleanup = opened.cleanup = async () => {
      await closeApart();
      return cleanupBackend();
    };
    const samples = await benchBackend(name, opened);
    results[name] = summarizeBackend(name, opened, samples);
    printBackend(name, results[name], cfg, log);
    const noisy = Object.entries(results[name].contenders).filter(
      ([, r]) => MODES.some((m) => r[m].spreadPct > 25),
    );
    if (noisy.length && cfg.rounds > 1) {
      log(`  warning: rounds disagree by more than 25% (${noisy.map(([c]) => c).join(', ')}); something else is using the CPU ` +
        `(load average now ${os.loadavg()[0].toFixed(2)}); the per-round ratios are the numbers to trust`);
    }
  } catch (error) {
    progress('');
    log(`${name}: run failed (${describeError(error)}) — no result`);
    results[name] = { status: 'failed', url: shownUrl, reason: describeError(error) };
  } finally {
    currentCleanup = undefined;
    try {
      const what = await withDeadline(opened.cleanup(), 20_000, `cleaning up ${name}`);
      if (what) log(`  cleanup: ${what}`);
    } catch (error) {
      log(`  cleanup of ${name} failed: ${describeError(error)}`);
    }
  }
}

log('');
log('== summary');
for (const name of selected) if (results[name]) log(verdictLine(name, results[name]));
const ran = Object.values(results).filter((r) => r.status === 'ran');
const totalSec = (performance.now() - started) / 1000;
log(`(${ran.length} of ${selected.length} backend(s) measured in ${totalSec.toFixed(0)} s)`);

const resultsFile = writeResults('leases', {
  generatedAt: new Date().toISOString(),
  node: process.version,
  platform: `${os.platform()} ${os.release()} ${os.arch()}`,
  cpus: os.cpus().length,
  cpuModel: os.cpus()[0]?.model,
  gcForced: typeof globalThis.gc === 'function',
  settings: cfg,
  loadAverage: { start: loadAtStart, end: os.loadavg() },
  goals: { vsRaw: 0.8, vsPeers: 1.0 },
  backends: results,
  durationSec: totalSec,
});
log(`results written to ${resultsFile}`);

if (ran.length === 0) {
  console.error('no backend could be benchmarked');
  process.exitCode = 1;
} else if (env.BENCH_STRICT === '1' && ran.some((r) => !r.goals.met)) {
  process.exitCode = 1;
}
