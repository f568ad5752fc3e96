#!/usr/bin/env node
// Webhook ingestion: signed GitHub push deliveries against `forgesync serve`,
// with bare Fastify's hello-world route as the ceiling, and a push storm.
//
//   npm run bench:webhooks            build, then: node bench/webhooks.mjs
//   BENCH_QUICK=1                     20 repositories, a 2,000-push storm, fewer stages (smoke test)
//   BENCH_REPOS=100                   upstream repositories (and sources)
//   BENCH_STORM=10000                 pushes in the storm
//   BENCH_STAGE_SECONDS=3             length of each rate stage
//   BENCH_KEEP=1                      keep the temp directory (printed)
//   BENCH_STRICT=1                    exit 1 when a goal is missed
//   BENCH_PROFILE_DIR=/tmp/prof       write a CPU profile of forgesync serve there
//   BENCH_TRACING=0                   leaves out the second serve with tracing on
//
// Method:
//  - N small bare upstreams (bench/lib/git-fleet.mjs) in a temp directory;
//    one source per upstream added through the library (Forgesync's replication.addSource)
//    on an embedded SQLite file; then `forgesync serve --port 0 --host
//    127.0.0.1` is started as a child process on that data directory
//    (FORGESYNC_GIT_PROTOCOLS=file, a GitHub webhook secret, log level info to
//    a file) and clones every source; the bench waits until all are synced.
//  - A second child process runs bare Fastify with one POST route answering
//    'ok' (bench/lib/webhooks-hello.mjs): the framework's ceiling.
//  - Deliveries: the real `push` payload of @octokit/webhooks-examples (7 kB),
//    one per repository, its clone URL pointed at the upstream, signed with
//    X-Hub-Signature-256, sent round-robin over the repositories from this
//    process over keep-alive HTTP/1.1 (bench/lib/webhooks-load.mjs).
//  - Rate stages: 200, 500, 1000, 2000 per second (open loop, BENCH_STAGE_SECONDS
//    each, over 64 keep-alive connections), unthrottled (64 connections, closed
//    loop), and unthrottled on a single repository; each stage runs
//    against hello, then forgesync, then hello again (the better hello run is
//    the ceiling); before the second hello run the bench waits until every
//    registry row caught up, so each stage starts idle. Accepted = 202 with result
//    "accepted" (forgesync), 200 (hello). Latency: send to last byte.
//    forgesync keeps syncing meanwhile (every accepted push is a request;
//    the syncs are ls-remote rounds that find nothing new), as in production.
//  - Tracing on (unless BENCH_TRACING=0): a second `forgesync serve` on a data
//    directory of its own (the same sources) with OTEL_EXPORTER_OTLP_ENDPOINT
//    set, exporting to a local OTLP/HTTP receiver in a child process
//    (bench/lib/otlp-receiver.mjs); each rate stage runs against it right after
//    the first serve (each side's syncs caught up before the other's run), and
//    "on/off" is its accepted/s over the first serve's, which runs with tracing off.
//  - Peak RSS: VmHWM of the serve process from /proc/<pid>/status.
//  - Storm: a new commit lands on every upstream, then BENCH_STORM pushes
//    round-robin over all repositories, unthrottled; at half-way a second
//    commit lands on every upstream while the deliveries continue; the last
//    10 % are sent after those commits landed (so the last push of every
//    repository announces its last commit). Then wait until every row caught
//    up; count per repository the sync attempts and the fetches (attempts
//    whose result is "synced", i.e. refs changed: noop rounds only ran
//    ls-remote) since the storm began, from the sync_attempts table; check
//    every mirror's refs equal its upstream's. Goal: ≤ 2 fetches per repository.
// Results also go to bench/results/webhooks.json.

import { randomBytes } from 'node:crypto';
import { intSetting, loads, log, mib, progress, quick, table, writeResults } from './lib/util.mjs';
import BetterSqlite3 from 'better-sqlite3';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { pino } from 'pino';
import { Forgesync, loadConfig } from '../dist/index.js';
import { createLogger } from '../dist/logging/logger.js';
import { pushDelivery } from './lib/push-delivery.mjs';
import { addCommit, createTemplate, createUpstreams, git, pool, refLines } from './lib/git-fleet.mjs';
import { runStage } from './lib/webhooks-load.mjs';
import { cpuMsOf, memoryOf, startHello, startServe, stop } from './lib/webhooks-procs.mjs';
import { startOtlpReceiver } from './lib/otlp-receiver.mjs';

const env = process.env;

const cfg = {
  quick,
  repos: intSetting('BENCH_REPOS', quick ? 20 : 100, 1),
  storm: intSetting('BENCH_STORM', quick ? 2000 : 10_000, 1),
  stageSeconds: intSetting('BENCH_STAGE_SECONDS', quick ? 1 : 3, 1),
  rates: quick ? [200, 1000, null] : [200, 500, 1000, 2000, null],
  unthrottledCount: quick ? 2000 : 10_000,
  concurrency: 64,
  stageMaxMs: 20_000,
  drainTimeoutMs: 180_000,
  keep: env.BENCH_KEEP === '1',
  strict: env.BENCH_STRICT === '1',
  tracing: env.BENCH_TRACING !== '0',
};
const GOAL_FETCHES_PER_REPO = 2;
// The webhook secret shared by the bench's server and client: from the environment, else random.
const SECRET = process.env.BENCH_GITHUB_WEBHOOK_SECRET ?? randomBytes(24).toString('hex');


const root = mkdtempSync(join(os.tmpdir(), 'forgesync-bench-webhooks-'));
let serve;
let hello;
let registryDb;
let traced;
let tracedDb;
let receiver;
const cleanup = async () => {
  registryDb?.close();
  tracedDb?.close();
  registryDb = tracedDb = undefined;
  await Promise.all([stop(serve?.child), stop(hello?.child), stop(traced?.child), receiver?.stop()]);
  if (!cfg.keep) rmSync(root, { recursive: true, force: true });
};
process.once('SIGINT', async () => {
  console.error('\ninterrupted: cleaning up');
  await cleanup();
  process.exit(130);
});

try {
  await main();
} finally {
  await cleanup();
}

async function main() {
  const gitVersion = (await git(['--version'])).trim();
  log(`forgesync webhook benchmark — node ${process.version}, ${gitVersion}, ${os.cpus().length} CPUs (${os.cpus()[0]?.model ?? '?'})`);
  log(`${cfg.repos} repositories, storm of ${cfg.storm} pushes, ${cfg.stageSeconds} s per rate stage; temp dir ${root}`);
  log(`load average at start: ${loads(os.loadavg())}`);
  const started = performance.now();

  // ---- fixtures ----
  progress('creating upstreams');
  const upstreamRoot = join(root, 'upstreams');
  mkdirSync(upstreamRoot);
  const template = await createTemplate(join(root, 'template.git'));
  const upstreams = await createUpstreams(template, upstreamRoot, cfg.repos, os.cpus().length * 2);
  const names = upstreams.map((_, i) => `repo-${String(i).padStart(4, '0')}`);

  const dataDir = join(root, 'forgesync');
  const serveEnv = {
    FORGESYNC_DATA_DIR: dataDir,
    FORGESYNC_GIT_PROTOCOLS: 'file',
    FORGESYNC_GITHUB_WEBHOOK_SECRET: SECRET,
    FORGESYNC_LOG_LEVEL: 'info',
  };
  const tracedEnv = { ...serveEnv, FORGESYNC_DATA_DIR: join(root, 'forgesync-traced') };
  progress('adding sources');
  let capacity;
  for (const setupEnv of cfg.tracing ? [serveEnv, tracedEnv] : [serveEnv]) {
    const setupApp = await Forgesync.open(loadConfig({ cwd: root, env: setupEnv }), {
      logger: createLogger({ level: 'warn', destination: pino.destination(join(root, 'setup.log')) }),
    });
    for (let i = 0; i < upstreams.length; i++) await setupApp.replication.addSource({ url: upstreams[i], name: names[i] });
    capacity = setupApp.config.maxConcurrentSyncs;
    await setupApp.close();
  }

  progress('starting forgesync serve and the hello-world server');
  const logFile = join(root, 'serve.log');
  [serve, hello] = await Promise.all([startServe(serveEnv, logFile, env.BENCH_PROFILE_DIR ? ['--cpu-prof', `--cpu-prof-dir=${env.BENCH_PROFILE_DIR}`] : []), startHello()]);
  registryDb = new BetterSqlite3(join(dataDir, 'forgesync.db'));
  registryDb.pragma('busy_timeout = 5000');
  progress('initial clones');
  await waitCaughtUp();
  if (cfg.tracing) {
    progress('starting the OTLP receiver and forgesync serve with tracing on');
    receiver = await startOtlpReceiver();
    // A queue large enough that spans are not dropped under the unthrottled stages: the cost of exporting every one is measured.
    const otel = { OTEL_EXPORTER_OTLP_ENDPOINT: receiver.endpoint, OTEL_SERVICE_NAME: 'forgesync-bench', OTEL_BSP_MAX_QUEUE_SIZE: '20000' };
    traced = await startServe({ ...tracedEnv, ...otel }, join(root, 'serve-traced.log'));
    tracedDb = new BetterSqlite3(join(tracedEnv.FORGESYNC_DATA_DIR, 'forgesync.db'));
    tracedDb.pragma('busy_timeout = 5000');
    await waitCaughtUp(tracedDb);
  }
  const rssAfterClone = memoryOf(serve.child.pid);

  // ---- deliveries ----
  const items = upstreams.map((upstream, i) => pushDelivery(SECRET, upstream, `bench/${names[i]}`));
  const forgesyncAccepted = (status, body) => status === 202 && body.includes('"result":"accepted"');
  const helloAccepted = (status) => status === 200;

  // ---- rate stages ----
  const plan = [
    ...cfg.rates.map((rate) => ({
      label: rate ? `${rate}/s` : 'unthrottled',
      rate,
      count: rate ? rate * cfg.stageSeconds : cfg.unthrottledCount,
      items,
    })),
    // One hot repository: at most one sync of it runs at a time (its lease), so
    // this shows the receiver with the sync work bounded by coalescing.
    { label: 'unthrottled, 1 repo', rate: null, count: Math.ceil(cfg.unthrottledCount / 2), items: [items[0]] },
  ];
  const stages = [];
  for (const { label, rate, count, items: stageItems } of plan) {
    const common = { items: stageItems, count, rate, concurrency: cfg.concurrency, maxMs: cfg.stageMaxMs };
    // The ceiling: the better of two hello runs, one before and one after forgesync's.
    const runHello = async () => {
      progress(`stage ${label}: hello`);
      const cpu = cpuMsOf(hello.child.pid);
      const run = await runStage({ ...common, url: `${hello.address}/hooks/github`, accepted: helloAccepted });
      run.serverCpuMs = cpuMsOf(hello.child.pid) - cpu;
      return run;
    };
    const helloBefore = await runHello();
    progress(`stage ${label}: forgesync`);
    const attemptsBefore = attemptCount();
    const serveCpu = cpuMsOf(serve.child.pid);
    const forgesyncResult = await runStage({
      ...common,
      url: `${serve.address}/hooks/github`,
      accepted: forgesyncAccepted,
      onProgress: (sent) => progress(`stage ${label}: forgesync ${sent}/${count}`),
    });
    forgesyncResult.serverCpuMs = cpuMsOf(serve.child.pid) - serveCpu;
    forgesyncResult.syncAttemptsDuringStage = attemptCount() - attemptsBefore;
    progress(`stage ${label}: waiting for the syncs to catch up`);
    const drainStart = performance.now();
    await waitCaughtUp();
    forgesyncResult.catchUpMs = performance.now() - drainStart;
    const tracedResult = traced ? await runTracedStage(label, common, forgesyncAccepted) : undefined;
    const helloAfter = await runHello();
    const helloResult = helloAfter.acceptedPerSec > helloBefore.acceptedPerSec ? helloAfter : helloBefore;
    helloResult.runsPerSec = [helloBefore.acceptedPerSec, helloAfter.acceptedPerSec];
    stages.push({
      label,
      rate,
      count,
      hello: helloResult,
      forgesync: forgesyncResult,
      ratio: forgesyncResult.acceptedPerSec / helloResult.acceptedPerSec,
      ...(tracedResult ? { traced: tracedResult, tracedRatio: tracedResult.acceptedPerSec / forgesyncResult.acceptedPerSec } : {}),
    });
  }
  const rssAfterStages = memoryOf(serve.child.pid);

  // ---- storm ----
  const storm = await runStorm(upstreams, names, items, forgesyncAccepted);
  const rssEnd = memoryOf(serve.child.pid);
  const helloRss = memoryOf(hello.child.pid);
  const metrics = await (await fetch(`${serve.address}/metrics`)).text();
  const tracing = traced ? { servePeakRssBytes: memoryOf(traced.child.pid).peak, exported: await receiver.count() } : undefined;
  progress('');

  // ---- report ----
  const result = {
    when: new Date().toISOString(),
    machine: { node: process.version, git: gitVersion, cpus: os.cpus().length, cpuModel: os.cpus()[0]?.model, loadavg: os.loadavg() },
    config: { ...cfg, capacity },
    stages,
    memory: {
      servePeakRssBytes: rssEnd.peak,
      serveRssAfterClonesBytes: rssAfterClone.current,
      serveRssAfterStagesBytes: rssAfterStages.current,
      serveRssEndBytes: rssEnd.current,
      helloPeakRssBytes: helloRss.peak,
    },
    storm,
    tracing,
    webhookMetrics: metrics.split('\n').filter((l) => l.startsWith('forgesync_webhooks_total')),
    syncMetrics: metrics.split('\n').filter((l) => l.startsWith('forgesync_syncs_total')),
    goals: { fetchesPerRepo: { target: GOAL_FETCHES_PER_REPO, met: storm.fetches.max <= GOAL_FETCHES_PER_REPO }, mirrorsEqual: storm.mirrorsEqual === cfg.repos },
    durationS: (performance.now() - started) / 1000,
  };
  printReport(result);
  const out = writeResults('webhooks', result);
  log(`\nresults written to ${out}${cfg.keep ? `; temp dir kept: ${root}` : ''}`);
  const met = result.goals.fetchesPerRepo.met && result.goals.mirrorsEqual;
  if (cfg.strict && !met) process.exitCode = 1;
}


/** Sync attempts recorded so far (all sources). */
function attemptCount(db = registryDb) {
  return db.prepare('select count(*) as n from sync_attempts').get().n;
}

/** A rate stage against the serve with tracing on (its syncs caught up after it, as the first serve's are). */
async function runTracedStage(label, common, accepted) {
  progress(`stage ${label}: forgesync, tracing on`);
  const attemptsBefore = attemptCount(tracedDb);
  const cpu = cpuMsOf(traced.child.pid);
  const run = await runStage({ ...common, url: `${traced.address}/hooks/github`, accepted });
  run.serverCpuMs = cpuMsOf(traced.child.pid) - cpu;
  run.syncAttemptsDuringStage = attemptCount(tracedDb) - attemptsBefore;
  progress(`stage ${label}: waiting for the traced serve's syncs to catch up`);
  const drainStart = performance.now();
  await waitCaughtUp(tracedDb);
  run.catchUpMs = performance.now() - drainStart;
  return run;
}

/** Waits until every registry row is synced and has caught up with its requests; throws on a failed row or timeout. */
async function waitCaughtUp(db = registryDb) {
  const deadline = Date.now() + cfg.drainTimeoutMs;
  const query = db.prepare(
    `select sum(case when state = 'synced' and completed_seq >= requested_seq then 1 else 0 end) as done,
            sum(case when state = 'failed' then 1 else 0 end) as failed, count(*) as n from registry`,
  );
  for (;;) {
    const { done, failed, n } = query.get();
    if (failed > 0) throw new Error(`${failed} source(s) failed; see the serve log`);
    if (done === n) return;
    if (Date.now() > deadline) throw new Error(`only ${done}/${n} sources caught up within ${cfg.drainTimeoutMs} ms`);
    await sleep(20);
  }
}

/** The storm: see the header comment. */
async function runStorm(upstreams, names, items, accepted) {
  progress('storm: first commit on every upstream');
  await pool(upstreams, 8, (upstream) => addCommit(upstream, 'storm 1'));
  const stormStart = Date.now();
  const t0 = performance.now();
  const base = { url: `${serve.address}/hooks/github`, items, concurrency: cfg.concurrency, maxMs: 120_000, accepted };
  const half = Math.floor(cfg.storm / 2);
  const tail = Math.ceil(cfg.storm / 10);
  progress('storm: first half');
  const first = await runStage({ ...base, count: half });
  progress('storm: second commit landing during the deliveries');
  // Offset the items so the round-robin continues where the first half stopped.
  const rotated = (from) => items.map((_, i) => items[(i + from) % items.length]);
  const commits = pool(upstreams, 4, (upstream) => addCommit(upstream, 'storm 2'));
  const middle = await runStage({ ...base, items: rotated(half), count: cfg.storm - half - tail });
  await commits;
  const commitsLandedMs = performance.now() - t0;
  progress('storm: last pushes');
  const last = await runStage({ ...base, items: rotated(cfg.storm - tail), count: tail });
  const sentMs = performance.now() - t0;
  progress('storm: waiting for every mirror to catch up');
  await waitCaughtUp();
  const caughtUpMs = performance.now() - t0;

  const perRepo = registryDb
    .prepare(
      `select s.name as name, s.url as url, r.mirror_path as mirror,
              (select count(*) from sync_attempts a where a.source_id = s.id and a.started_at >= ?) as attempts,
              (select count(*) from sync_attempts a where a.source_id = s.id and a.started_at >= ? and a.result = 'synced') as fetches
         from sources s join registry r on r.source_id = s.id order by s.name`,
    )
    .all(stormStart, stormStart);
  progress('storm: comparing mirrors with upstreams');
  const equal = await pool(perRepo, 8, async (row) => (await refLines(row.mirror)) === (await refLines(row.url)));
  const stat = (key) => {
    const values = perRepo.map((r) => r[key]);
    return { min: Math.min(...values), mean: values.reduce((a, b) => a + b, 0) / values.length, max: Math.max(...values), total: values.reduce((a, b) => a + b, 0) };
  };
  const phases = [first, middle, last];
  const acceptedCount = phases.reduce((sum, p) => sum + p.accepted, 0);
  return {
    deliveries: phases.reduce((sum, p) => sum + p.completed, 0),
    accepted: acceptedCount,
    statuses: phases.map((p) => p.statuses),
    sentMs,
    acceptedPerSec: (acceptedCount * 1000) / sentMs,
    p50Ms: Math.max(first.p50Ms, middle.p50Ms, last.p50Ms),
    p99Ms: Math.max(first.p99Ms, middle.p99Ms, last.p99Ms),
    commitsLandedMs,
    caughtUpMs,
    commitsPerRepo: 2,
    attempts: stat('attempts'),
    fetches: stat('fetches'),
    fetchHistogram: perRepo.reduce((h, r) => ({ ...h, [r.fetches]: (h[r.fetches] ?? 0) + 1 }), {}),
    mirrorsEqual: equal.filter(Boolean).length,
    mirrorsDiffering: perRepo.filter((_, i) => !equal[i]).map((r) => r.name),
    repos: names.length,
  };
}

function printReport(r) {
  const int = (n) => (Number.isFinite(n) ? Math.round(n).toLocaleString('en-US') : '-');
  const ms = (n) => (Number.isFinite(n) ? (n < 10 ? n.toFixed(2) : n.toFixed(1)) : '-');
  log('');
  log(
    table(
      ['stage', 'sent', 'hello ok/s', 'p50 ms', 'p99 ms', 'forgesync accepted/s', 'p50 ms', 'p99 ms', 'ratio', 'server CPU ms/delivery', 'syncs during', 'catch-up s'],
      r.stages.map((s) => [
        s.label,
        int(s.forgesync.sent),
        int(s.hello.acceptedPerSec),
        ms(s.hello.p50Ms),
        ms(s.hello.p99Ms),
        int(s.forgesync.acceptedPerSec),
        ms(s.forgesync.p50Ms),
        ms(s.forgesync.p99Ms),
        `${s.ratio.toFixed(2)}×`,
        (s.forgesync.serverCpuMs / Math.max(1, s.forgesync.completed)).toFixed(3),
        int(s.forgesync.syncAttemptsDuringStage),
        (s.forgesync.catchUpMs / 1000).toFixed(1),
      ]),
    ),
  );
  const bad = r.stages.filter((s) => s.forgesync.accepted !== s.forgesync.sent);
  for (const s of bad) log(`  note: stage ${s.label}: ${s.forgesync.accepted}/${s.forgesync.sent} accepted, statuses ${JSON.stringify(s.forgesync.statuses)}`);
  log('  (ratio = forgesync accepted/s ÷ hello ok/s in the same stage; latency from send to last byte, client in this process)');
  if (r.tracing) {
    log('');
    log(
      table(
        ['stage', 'off accepted/s', 'p50 ms', 'p99 ms', 'CPU ms/delivery', 'on accepted/s', 'p50 ms', 'p99 ms', 'CPU ms/delivery', 'on/off', 'syncs during (on)'],
        r.stages.map((s) => [
          s.label,
          int(s.forgesync.acceptedPerSec),
          ms(s.forgesync.p50Ms),
          ms(s.forgesync.p99Ms),
          (s.forgesync.serverCpuMs / Math.max(1, s.forgesync.completed)).toFixed(3),
          int(s.traced.acceptedPerSec),
          ms(s.traced.p50Ms),
          ms(s.traced.p99Ms),
          (s.traced.serverCpuMs / Math.max(1, s.traced.completed)).toFixed(3),
          `${s.tracedRatio.toFixed(2)}×`,
          int(s.traced.syncAttemptsDuringStage),
        ]),
      ),
    );
    const exported = r.tracing.exported;
    log(`  (tracing on: a second serve exporting OTLP/HTTP protobuf to a local receiver: ${int(exported.spans)} spans in ${int(exported.requests)} exports, ${mib(exported.bytes).toFixed(1)} MiB; its peak RSS ${mib(r.tracing.servePeakRssBytes).toFixed(1)} MiB)`);
  }
  log(
    `peak RSS of forgesync serve (VmHWM): ${mib(r.memory.servePeakRssBytes).toFixed(1)} MiB` +
      ` (after clones ${mib(r.memory.serveRssAfterClonesBytes).toFixed(1)}, after stages ${mib(r.memory.serveRssAfterStagesBytes).toFixed(1)},` +
      ` at the end ${mib(r.memory.serveRssEndBytes).toFixed(1)} MiB); hello-world peak ${mib(r.memory.helloPeakRssBytes).toFixed(1)} MiB`,
  );
  const s = r.storm;
  log('');
  log(
    table(
      ['storm', 'value'],
      [
        ['deliveries (accepted)', `${int(s.deliveries)} (${int(s.accepted)})`],
        ['repositories / commits landed per repo', `${s.repos} / ${s.commitsPerRepo}`],
        ['accepted/s (p50 / p99 ms)', `${int(s.acceptedPerSec)} (${ms(s.p50Ms)} / ${ms(s.p99Ms)})`],
        ['all sent after', `${(s.sentMs / 1000).toFixed(1)} s`],
        ['every mirror caught up after', `${(s.caughtUpMs / 1000).toFixed(1)} s`],
        ['sync attempts per repo (min / mean / max)', `${s.attempts.min} / ${s.attempts.mean.toFixed(2)} / ${s.attempts.max}`],
        ['fetches per repo (min / mean / max)', `${s.fetches.min} / ${s.fetches.mean.toFixed(2)} / ${s.fetches.max}`],
        ['repos by number of fetches', Object.entries(s.fetchHistogram).map(([k, v]) => `${k}: ${v}`).join(', ')],
        ['mirrors equal to upstream', `${s.mirrorsEqual}/${s.repos}`],
      ],
    ),
  );
  log(
    `goal ≤ ${GOAL_FETCHES_PER_REPO} fetches per repository: ${r.goals.fetchesPerRepo.met ? 'met' : 'NOT met'};` +
      ` every final mirror equal to its upstream: ${r.goals.mirrorsEqual ? 'yes' : `NO (${s.mirrorsDiffering.slice(0, 5).join(', ')})`}`,
  );
  log(`total ${r.durationS.toFixed(0)} s`);
}
