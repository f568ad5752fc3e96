#!/usr/bin/env node
// Mirror sync throughput: forgesync's real service path vs a plain
// `git fetch` loop over the same upstreams with the same parallelism.
//
//   npm run bench:sync                build, then: node --expose-gc bench/sync.mjs
//   BENCH_QUICK=1                     40 repositories, 2 cycles of each kind (smoke test)
//   BENCH_REPOS=200                   number of upstreams
//   BENCH_PARALLEL=4                  forgesync capacity = plain loop parallelism
//   BENCH_CYCLES=3                    measured cycles of each kind
//   BENCH_KEEP=1                      keep the temp directory (printed)
//   BENCH_STRICT=1                    exit 1 when a goal is missed
//   BENCH_BULLMQ_URL=redis://…/8      Redis of the BullMQ side (BENCH_BULLMQ=0 leaves that side out)
//   BENCH_TRACING=0                   leaves the "traced" side (tracing on) out
//
// Method:
//  - N small bare upstreams (a template with 4 commits, 2 branches, a
//    lightweight and an annotated tag, copied N times, each given a commit of
//    its own) in a temp directory, served over local paths.
//  - forgesync: Forgesync.open on an embedded SQLite file, FORGESYNC_GIT_PROTOCOLS
//    =file, capacity P, logging at info to a file; startService(); every
//    source added and cloned (not timed). A measured run calls
//    requestSync(name) for every source — the real path: registry request,
//    job enqueued, InProcessTransport workers, lease, SyncService — and ends
//    when every registry row has completedSeq ≥ requestedSeq and state synced.
//  - bullmq (reported, no goal): the same on a second Forgesync instance whose
//    jobs go through BullMQ on Redis (FORGESYNC_JOBS_URL), on mirrors of its own.
//  - traced (reported, no goal): the same on a third instance (mirrors of its
//    own) with tracing on for its runs only: OTLP/HTTP export to a local
//    receiver in a child process (bench/lib/otlp-receiver.mjs); each run starts
//    the provider, and its time includes exporting the last batch (stopTracing).
//    The other sides run with tracing off, as every deployment without
//    OTEL_EXPORTER_OTLP_ENDPOINT does; "off cost" is the helper's cost per
//    call with tracing off (withSpan vs calling the function).
//  - plain: `git clone --mirror --no-local` of every upstream (not timed); a
//    measured run is `git --git-dir=<mirror> fetch --prune origin` (the
//    mirror's configured refspec is +refs/*:refs/*) in every mirror through
//    child_process.execFile, P at a time.
//  - floor (for reference, not a goal): what the mandated design costs with
//    plain git and no bookkeeping at all, on a third set of mirrors: `git
//    ls-remote --symref <url>` per upstream, then `git fetch --prune origin`
//    only when the listing differs from the one seen last time (kept in
//    memory). forgesync must ls-remote before fetching too, so this is the
//    bound for it (less the auto-maintenance process forgesync's fetch skips
//    when nothing is due); floor/plain shows how far down a goal can go.
//  - cycles: "all changed" first pushes one new commit to every upstream (not
//    timed), then every side catches up; "none changed" changes nothing. One
//    untimed warm-up of each kind, then BENCH_CYCLES of each kind, the order of
//    the sides rotating per cycle; the table shows medians, and a ratio is the
//    median of the per-cycle ratios (the sides ran seconds apart).
//  - CPU: besides wall time, the CPU time each run cost (this process plus
//    every git process it waited for, from /proc/self/stat on Linux). On a
//    shared machine the wall times swing with other load; CPU time does much
//    less, and with P ≥ cores the runs are CPU-bound, so the CPU ratio is the
//    steadier estimate of the same thing.
//  - memory: process RSS sampled every 50 ms while forgesync runs (peak), and
//    RSS / heap after a forced gc() at the end of every cycle.
// Results also go to bench/results/sync.json.

import { intSetting, loads, log, mib, progress, quick, reportLoad, table, writeResults } from './lib/util.mjs';
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { Redis } from 'ioredis';
import { pino } from 'pino';
import { Forgesync, loadConfig } from '../dist/index.js';
import { createLogger } from '../dist/logging/logger.js';
import { addCommit, cloneMirror, createTemplate, createUpstreams, git, pool, PLAIN_GIT_ENV, refLines } from './lib/git-fleet.mjs';
import { collectGarbage, median, rotate, spreadPct } from './lib/harness.mjs';
import { startOtlpReceiver } from './lib/otlp-receiver.mjs';
import { startTracing, stopTracing, withSpan } from '../dist/tracing/index.js';

const env = process.env;

const cfg = {
  quick,
  repos: intSetting('BENCH_REPOS', quick ? 40 : 200, 1),
  parallel: intSetting('BENCH_PARALLEL', 4, 1),
  cycles: intSetting('BENCH_CYCLES', quick ? 2 : 3, 1),
  rssSampleMs: 50,
  keep: env.BENCH_KEEP === '1',
  strict: env.BENCH_STRICT === '1',
  tracing: env.BENCH_TRACING !== '0',
  bullmqUrl: env.BENCH_BULLMQ === '0' ? undefined : (env.BENCH_BULLMQ_URL ?? `redis://127.0.0.1:6379/8?prefix=bench-sync-${process.pid}`),
};
const GOALS = { changed: 1.1, unchanged: 0.5 };
const SCENARIOS = [
  { key: 'changed', label: 'all changed' },
  { key: 'unchanged', label: 'none changed' },
];


/** Samples RSS every `intervalMs` while `active`; `peak` is the highest sample (and reading) seen while active. */
class RssSampler {
  peak = 0;
  active = false;
  #timer = setInterval(() => this.sample(), cfg.rssSampleMs);
  constructor() {
    this.#timer.unref();
  }
  sample() {
    if (this.active) this.peak = Math.max(this.peak, process.memoryUsage.rss());
  }
  stop() {
    clearInterval(this.#timer);
  }
}

/** CPU time used so far by this process and by the children it waited for, in ms; undefined off Linux. */
function cpuNow() {
  try {
    const stat = readFileSync('/proc/self/stat', 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const tick = 1000 / CLOCK_TICKS;
    return { self: (Number(fields[11]) + Number(fields[12])) * tick, children: (Number(fields[13]) + Number(fields[14])) * tick };
  } catch {
    return undefined;
  }
}
// USER_HZ: 100 on every Linux architecture Node runs on.
const CLOCK_TICKS = 100;

/** Runs `fn`, returning its wall time and the CPU time (self + waited-for children) it cost. */
async function measured(fn) {
  const cpu0 = cpuNow();
  const t0 = performance.now();
  await fn();
  const ms = performance.now() - t0;
  const cpu1 = cpuNow();
  const cpu = cpu0 && cpu1 ? { self: cpu1.self - cpu0.self, children: cpu1.children - cpu0.children } : undefined;
  return { ms, cpuMs: cpu ? cpu.self + cpu.children : undefined, cpu };
}

const root = mkdtempSync(join(os.tmpdir(), 'forgesync-bench-sync-'));
let app;
let bull;
let traced;
let receiver;
const cleanup = async () => {
  await stopTracing();
  await app?.close().catch(() => {});
  await bull?.close().catch(() => {});
  await traced?.close().catch(() => {});
  await receiver?.stop();
  app = bull = traced = receiver = undefined;
  if (cfg.bullmqUrl) await dropQueueKeys(cfg.bullmqUrl).catch(() => {});
  if (!cfg.keep) rmSync(root, { recursive: true, force: true });
};

/** Deletes the BullMQ side's keys (its prefix) from Redis. */
async function dropQueueKeys(url) {
  const redis = new Redis(url);
  const prefix = new URL(url).searchParams.get('prefix') ?? 'forgesync-jobs';
  let cursor = '0';
  do {
    const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}:*`, 'COUNT', 1000);
    if (keys.length) await redis.del(...keys);
    cursor = next;
  } while (cursor !== '0');
  await redis.quit();
}
// A run that throws half-way still removes its temp directory (the SQLite file closes with the process).
process.once('exit', () => {
  if (!cfg.keep) rmSync(root, { recursive: true, force: true });
});
process.once('SIGINT', async () => {
  console.error('\ninterrupted: cleaning up');
  await cleanup();
  process.exit(130);
});

const gitVersion = (await git(['--version'])).trim();
log(
  `forgesync sync benchmark — node ${process.version}, ${gitVersion}, ${os.cpus().length} CPUs (${os.cpus()[0]?.model ?? '?'}), ` +
    `gc ${typeof globalThis.gc === 'function' ? 'forced between cycles' : 'NOT exposed (run with --expose-gc)'}`,
);
log(`${cfg.repos} upstreams, parallelism ${cfg.parallel}, ${cfg.cycles} measured cycle(s) of each kind after one warm-up; temp dir ${root}`);
const loadAtStart = os.loadavg();
log(`load average at start: ${loads(loadAtStart)}`);

const started = performance.now();
const setupParallel = Math.max(cfg.parallel, os.cpus().length * 2);

// ---- fixtures (not timed) ----
progress('creating upstreams');
const upstreamRoot = join(root, 'upstreams');
mkdirSync(upstreamRoot);
const template = await createTemplate(join(root, 'template.git'));
const upstreams = await createUpstreams(template, upstreamRoot, cfg.repos, setupParallel);
const names = upstreams.map((_, i) => `repo-${String(i).padStart(4, '0')}`);

progress('cloning plain mirrors');
const plainRoot = join(root, 'plain');
mkdirSync(plainRoot);
const plainMirrors = upstreams.map((_, i) => join(plainRoot, `${names[i]}.git`));
await pool(upstreams, setupParallel, (url, i) => cloneMirror(url, plainMirrors[i]));

progress('cloning floor mirrors');
const floorRoot = join(root, 'floor');
mkdirSync(floorRoot);
const floorMirrors = upstreams.map((_, i) => join(floorRoot, `${names[i]}.git`));
await pool(upstreams, setupParallel, (url, i) => cloneMirror(url, floorMirrors[i]));
const floorListings = await pool(upstreams, setupParallel, (url) => git(['ls-remote', '--symref', '--end-of-options', url]));

progress('opening forgesync');
/** A Forgesync instance of the bench: its own data directory, capacity P, logging at info to a file. */
async function openInstance(name, extraEnv = {}) {
  const config = loadConfig({
    cwd: root,
    env: {
      FORGESYNC_DATA_DIR: join(root, name),
      FORGESYNC_GIT_PROTOCOLS: 'file',
      FORGESYNC_MAX_CONCURRENT_SYNCS: String(cfg.parallel),
      ...extraEnv,
    },
  });
  const instance = await Forgesync.open(config, { logger: createLogger({ level: 'info', destination: pino.destination(join(root, `${name}.log`)) }) });
  await instance.startService();
  return instance;
}
const rssBeforeOpen = process.memoryUsage.rss();
app = await openInstance('forgesync');

/** Resolves when every registry row of `instance` has caught up with its requests; throws on a failed row. */
async function waitCaughtUp(instance, deadlineMs = 10 * 60_000) {
  const deadline = Date.now() + deadlineMs;
  for (;;) {
    // The registry is read once the transport is idle.
    const { running, queued } = await instance.kernel.jobs.load('sync');
    if (running === 0 && queued === 0) {
      const rows = await instance.replication.listSources();
      const failed = rows.filter((row) => row.registry.state === 'failed');
      if (failed.length) throw new Error(`${failed.length} source(s) failed, e.g. ${failed[0].name}: ${failed[0].registry.lastFailure}`);
      if (rows.every((row) => row.registry.state === 'synced' && row.registry.completedSeq >= row.registry.requestedSeq)) return rows;
    }
    if (Date.now() > deadline) throw new Error('forgesync did not catch up in time');
    await sleep(2);
  }
}

progress(`forgesync: adding and cloning ${cfg.repos} sources`);
for (let i = 0; i < upstreams.length; i++) await app.replication.addSource({ url: upstreams[i], name: names[i] });
await waitCaughtUp(app);
if (cfg.bullmqUrl) {
  progress(`forgesync on BullMQ: adding and cloning ${cfg.repos} sources`);
  bull = await openInstance('forgesync-bullmq', { FORGESYNC_JOBS_URL: cfg.bullmqUrl });
  for (let i = 0; i < upstreams.length; i++) await bull.replication.addSource({ url: upstreams[i], name: names[i] });
  await waitCaughtUp(bull);
}

if (cfg.tracing) {
  progress(`forgesync traced: adding and cloning ${cfg.repos} sources`);
  receiver = await startOtlpReceiver();
  traced = await openInstance('forgesync-traced');
  for (let i = 0; i < upstreams.length; i++) await traced.replication.addSource({ url: upstreams[i], name: names[i] });
  await waitCaughtUp(traced);
}
// The SDK reads its settings from the environment: only the traced runs start it (runTraced).
// A queue large enough that no span is dropped: the cost of exporting every one is measured.
const tracingEnv = { ...process.env, OTEL_EXPORTER_OTLP_ENDPOINT: receiver?.endpoint ?? '', OTEL_SERVICE_NAME: 'forgesync-bench', OTEL_BSP_MAX_QUEUE_SIZE: '20000' };
if (receiver) Object.assign(process.env, tracingEnv);

/** ns per call of the tracing helper with tracing off, over calling the function itself. */
async function offCostNs(calls = 200_000) {
  const work = async () => 1;
  const attributes = { 'forgesync.source': 'x' };
  const time = async (fn) => {
    const t0 = performance.now();
    for (let i = 0; i < calls; i++) await fn();
    return ((performance.now() - t0) * 1e6) / calls;
  };
  await time(work);
  const direct = await time(work);
  const wrapped = await time(() => withSpan('sync', attributes, work));
  return { directNs: direct, withSpanNs: wrapped, overheadNs: wrapped - direct };
}
const offCost = await offCostNs();

const sampler = new RssSampler();

/** One forgesync run of `instance`: request a sync of every source, wait until all rows caught up. */
async function runForgesync(instance, after) {
  collectGarbage();
  sampler.active = true;
  let rows;
  const run = await measured(async () => {
    for (const name of names) await instance.replication.requestSync(name, { trigger: 'library' });
    rows = await waitCaughtUp(instance);
    await after?.();
  });
  sampler.sample();
  sampler.active = false;
  const unverified = rows.filter((row) => row.registry.verificationState !== 'verified').length;
  if (unverified) throw new Error(`${unverified} forgesync mirror(s) not verified after the run`);
  return run;
}

/** One plain run: `git fetch --prune origin` in every mirror, P at a time. */
async function runPlain() {
  collectGarbage();
  return measured(() => pool(plainMirrors, cfg.parallel, (mirror) => git([`--git-dir=${mirror}`, 'fetch', '--prune', 'origin'])));
}

/** One floor run: ls-remote every upstream, fetch only those whose listing changed, P at a time. */
async function runFloor() {
  collectGarbage();
  return measured(() =>
    pool(upstreams, cfg.parallel, async (url, i) => {
      const listing = await git(['ls-remote', '--symref', '--end-of-options', url]);
      if (listing === floorListings[i]) return;
      await git([`--git-dir=${floorMirrors[i]}`, 'fetch', '--prune', 'origin']);
      floorListings[i] = listing;
    }),
  );
}
/** One run of the traced instance with tracing on: the provider started before, its last batch exported within the run. */
async function runTraced() {
  await startTracing(tracingEnv);
  return runForgesync(traced, stopTracing);
}
const RUNNERS = { forgesync: () => runForgesync(app), plain: runPlain, floor: runFloor, ...(bull ? { bullmq: () => runForgesync(bull) } : {}), ...(traced ? { traced: runTraced } : {}) };
const SIDES = Object.keys(RUNNERS);

let changeCounter = 0;
async function changeAll() {
  changeCounter++;
  await pool(upstreams, setupParallel, (upstream) => addCommit(upstream, `cycle ${changeCounter}`));
}

const samples = { changed: [], unchanged: [] };
const memory = [];
const rssAfterGc = () => {
  collectGarbage();
  const usage = process.memoryUsage();
  return { rss: usage.rss, heapUsed: usage.heapUsed, external: usage.external };
};

for (let cycle = 0; cycle <= cfg.cycles; cycle++) {
  const warmup = cycle === 0;
  for (const scenario of SCENARIOS) {
    progress(`${warmup ? 'warm-up' : `cycle ${cycle}/${cfg.cycles}`}: ${scenario.label}`);
    if (scenario.key === 'changed') await changeAll();
    const order = rotate(SIDES, cycle);
    const sample = { cycle, order: order.join(' then ') };
    const cpu = {};
    for (const who of order) {
      const run = await RUNNERS[who]();
      sample[who] = run.ms;
      cpu[who] = run.cpu;
    }
    sample.ratio = sample.forgesync / sample.plain;
    if (bull) sample.bullmqRatio = sample.bullmq / sample.plain;
    if (traced) sample.tracedRatio = sample.traced / sample.forgesync;
    sample.floorRatio = sample.floor / sample.plain;
    sample.overFloor = sample.forgesync / sample.floor;
    if (SIDES.every((who) => cpu[who])) {
      sample.cpu = cpu;
      const total = (who) => cpu[who].self + cpu[who].children;
      sample.cpuRatio = total('forgesync') / total('plain');
      if (bull) sample.bullmqCpuRatio = total('bullmq') / total('plain');
      if (traced) sample.tracedCpuRatio = total('traced') / total('forgesync');
      sample.cpuFloorRatio = total('floor') / total('plain');
    }
    sample.loadAverage = os.loadavg()[0];
    if (!warmup) samples[scenario.key].push(sample);
    memory.push({ cycle, warmup, scenario: scenario.key, ...rssAfterGc() });
  }
}
progress('checking mirrors');
sampler.stop();

// Both sides must have ended where the upstreams are.
const mismatched = [];
await pool(upstreams, setupParallel, async (upstream, i) => {
  const expected = await refLines(upstream);
  const row = await app.replication.getSource(names[i]);
  if ((await refLines(row.registry.mirrorPath)) !== expected) mismatched.push(`forgesync ${names[i]}`);
  if (bull && (await refLines((await bull.replication.getSource(names[i])).registry.mirrorPath)) !== expected) mismatched.push(`bullmq ${names[i]}`);
  if (traced && (await refLines((await traced.replication.getSource(names[i])).registry.mirrorPath)) !== expected) mismatched.push(`traced ${names[i]}`);
  if ((await refLines(plainMirrors[i])) !== expected) mismatched.push(`plain ${names[i]}`);
  if ((await refLines(floorMirrors[i])) !== expected) mismatched.push(`floor ${names[i]}`);
});
progress('');
if (mismatched.length) log(`WARNING: ${mismatched.length} mirror(s) differ from their upstream, e.g. ${mismatched.slice(0, 3).join(', ')}`);

// ---- report ----
const results = {};
for (const scenario of SCENARIOS) {
  const list = samples[scenario.key];
  const plainMs = median(list.map((s) => s.plain));
  const forgesyncMs = median(list.map((s) => s.forgesync));
  const floorMs = median(list.map((s) => s.floor));
  const ratio = median(list.map((s) => s.ratio));
  results[scenario.key] = {
    label: scenario.label,
    plainMs,
    forgesyncMs,
    floorMs,
    ratio,
    ratioOfMedians: forgesyncMs / plainMs,
    ...(bull
      ? {
          bullmqMs: median(list.map((s) => s.bullmq)),
          bullmqRatio: median(list.map((s) => s.bullmqRatio)),
          bullmqCpuRatio: list.every((s) => s.cpu) ? median(list.map((s) => s.bullmqCpuRatio)) : undefined,
        }
      : {}),
    ...(traced
      ? {
          tracedMs: median(list.map((s) => s.traced)),
          tracedRatio: median(list.map((s) => s.tracedRatio)),
          tracedCpuRatio: list.every((s) => s.cpu) ? median(list.map((s) => s.tracedCpuRatio)) : undefined,
        }
      : {}),
    floorRatio: median(list.map((s) => s.floorRatio)),
    cpu: list.every((s) => s.cpu)
      ? Object.fromEntries(
          SIDES.map((who) => [
            who,
            {
              selfMs: median(list.map((s) => s.cpu[who].self)),
              childrenMs: median(list.map((s) => s.cpu[who].children)),
            },
          ]),
        )
      : undefined,
    cpuRatio: list.every((s) => s.cpu) ? median(list.map((s) => s.cpuRatio)) : undefined,
    cpuFloorRatio: list.every((s) => s.cpu) ? median(list.map((s) => s.cpuFloorRatio)) : undefined,
    overFloor: median(list.map((s) => s.overFloor)),
    spreadPct: {
      plain: spreadPct(list.map((s) => s.plain)),
      forgesync: spreadPct(list.map((s) => s.forgesync)),
      floor: spreadPct(list.map((s) => s.floor)),
    },
    goal: GOALS[scenario.key],
    met: ratio <= GOALS[scenario.key],
    samples: list,
  };
}

const measuredMemory = memory.filter((m) => !m.warmup);
const rssValues = measuredMemory.map((m) => m.rss);
const rssGrowth = rssValues.length ? rssValues[rssValues.length - 1] - rssValues[0] : 0;
const heapGrowth = measuredMemory.length ? measuredMemory[measuredMemory.length - 1].heapUsed - measuredMemory[0].heapUsed : 0;
// "Flat": the last measured cycle ends within 10% (and at least 8 MiB) of the first one.
const memoryFlat = rssGrowth <= Math.max(8 * 1024 * 1024, rssValues[0] * 0.1);

const ms = (n) => `${Math.round(n).toLocaleString('en-US')}`;
const x = (n) => `${n.toFixed(2)}×`;

log('');
log(
  table(
    ['scenario', 'plain ms', 'forgesync ms', 'ratio', 'goal', 'met?'],
    SCENARIOS.map(({ key }) => {
      const r = results[key];
      return [r.label, ms(r.plainMs), ms(r.forgesyncMs), x(r.ratio), `≤ ${x(r.goal)}`, r.met ? 'yes' : 'NO'];
    }),
  ),
);
log(`  (${cfg.repos} repos, parallelism ${cfg.parallel}; medians of ${cfg.cycles} cycles; ratio = median of per-cycle forgesync/plain)`);
if (bull) {
  log('');
  log(
    table(
      ['jobs on BullMQ (no goal)', 'plain ms', 'bullmq ms', 'ratio', 'cpu ratio', 'in-process ratio'],
      SCENARIOS.map(({ key }) => {
        const r = results[key];
        return [r.label, ms(r.plainMs), ms(r.bullmqMs), x(r.bullmqRatio), r.bullmqCpuRatio ? x(r.bullmqCpuRatio) : '-', x(r.ratio)];
      }),
    ),
  );
  log('  (the same runs with FORGESYNC_JOBS_URL: a second instance whose jobs go through BullMQ on Redis)');
}
const exported = receiver ? await receiver.count() : undefined;
if (traced) {
  log('');
  log(
    table(
      ['tracing on vs off (no goal)', 'off ms', 'on ms', 'on/off', 'cpu on/off'],
      SCENARIOS.map(({ key }) => {
        const r = results[key];
        return [r.label, ms(r.forgesyncMs), ms(r.tracedMs), x(r.tracedRatio), r.tracedCpuRatio ? x(r.tracedCpuRatio) : '-'];
      }),
    ),
  );
  log(`  (traced = a third instance with tracing on, OTLP/HTTP protobuf to a local receiver: ${exported.spans.toLocaleString('en-US')} spans in ${exported.requests} exports, ${mib(exported.bytes).toFixed(1)} MiB)`);
}
log(`  tracing off: withSpan costs ${offCost.overheadNs.toFixed(0)} ns per call over the call itself (${offCost.withSpanNs.toFixed(0)} vs ${offCost.directNs.toFixed(0)} ns); a sync makes about 10 such calls`);
log('');
log(
  table(
    ['reference: floor', 'floor ms', 'floor/plain', 'forgesync/floor'],
    SCENARIOS.map(({ key }) => {
      const r = results[key];
      return [r.label, ms(r.floorMs), x(r.floorRatio), x(r.overFloor)];
    }),
  ),
);
log('  (floor = plain git doing only what the design mandates: ls-remote, then fetch if the listing changed)');
if (SCENARIOS.every(({ key }) => results[key].cpu)) {
  log('');
  const perSync = (value) => (value / cfg.repos).toFixed(1);
  log(
    table(
      ['CPU per sync (ms)', 'plain', 'forgesync', '(self+git)', 'floor', 'cpu ratio', 'floor/plain'],
      SCENARIOS.map(({ key }) => {
        const r = results[key];
        const total = (who) => r.cpu[who].selfMs + r.cpu[who].childrenMs;
        return [
          r.label,
          perSync(total('plain')),
          perSync(total('forgesync')),
          `${perSync(r.cpu.forgesync.selfMs)}+${perSync(r.cpu.forgesync.childrenMs)}`,
          perSync(total('floor')),
          x(r.cpuRatio),
          x(r.cpuFloorRatio),
        ];
      }),
    ),
  );
  log('  (CPU = this process + the git processes it ran, medians; cpu ratio = median of per-cycle forgesync/plain)');
}
for (const { key } of SCENARIOS) {
  const r = results[key];
  log(
    `  ${r.label}: per cycle forgesync/plain/floor ms = ${r.samples.map((s) => `${ms(s.forgesync)}/${ms(s.plain)}/${ms(s.floor)}`).join(', ')}` +
      `; per sync ${(r.forgesyncMs / cfg.repos).toFixed(1)}/${(r.plainMs / cfg.repos).toFixed(1)}/${(r.floorMs / cfg.repos).toFixed(1)} ms`,
  );
}
log('');
log(`forgesync peak RSS while syncing: ${mib(sampler.peak).toFixed(1)} MiB (sampled every ${cfg.rssSampleMs} ms; ${mib(rssBeforeOpen).toFixed(1)} MiB before Forgesync.open)`);
log(
  table(
    ['after cycle', 'RSS MiB', 'heap used MiB'],
    memory.map((m) => [`${m.warmup ? 'warm-up' : m.cycle} ${m.scenario}`, mib(m.rss).toFixed(1), mib(m.heapUsed).toFixed(1)]),
  ),
);
log(
  `memory across measured cycles (after gc): RSS ${rssGrowth >= 0 ? '+' : ''}${mib(rssGrowth).toFixed(1)} MiB, ` +
    `heap ${heapGrowth >= 0 ? '+' : ''}${mib(heapGrowth).toFixed(1)} MiB → ${memoryFlat ? 'flat' : 'GROWING'}`,
);
const loadAtEnd = reportLoad(loadAtStart, SCENARIOS.flatMap(({ key }) => samples[key].map((s) => s.loadAverage)), ' (see the CPU table)');
const allMet = SCENARIOS.every(({ key }) => results[key].met) && memoryFlat && mismatched.length === 0;
log(`goals: ${allMet ? 'all met' : 'NOT all met'} (${((performance.now() - started) / 1000).toFixed(0)} s)`);

const resultsFile = writeResults('sync', {
      date: new Date().toISOString(),
      node: process.version,
      git: gitVersion,
      cpus: os.cpus().length,
      cpuModel: os.cpus()[0]?.model,
      loadAverage: { start: loadAtStart, end: loadAtEnd },
      config: { ...cfg, goals: GOALS },
      method: {
        forgesync: 'Forgesync.startService(); requestSync(name) for every source; done when every row is synced with completedSeq ≥ requestedSeq',
        bullmq: 'the same on a second instance with FORGESYNC_JOBS_URL (BullMQ on Redis)',
        plain: 'git --git-dir=<mirror> fetch --prune origin (mirror refspec +refs/*:refs/*) via execFile, P at a time',
        floor: 'git ls-remote --symref <url>, then git fetch --prune origin only when the listing changed since the last run; P at a time',
        plainEnv: Object.keys(PLAIN_GIT_ENV),
      },
      results,
      memory: { peakRss: sampler.peak, rssBeforeOpen, perCycle: memory, rssGrowth, heapGrowth, flat: memoryFlat },
      tracing: { offCost, exported },
      mirrorsMatchingUpstream: mismatched.length === 0,
      goalsMet: allMet,
});
log(`results written to ${resultsFile}`);
await cleanup();
if (cfg.keep) log(`kept ${root}`);
if (cfg.strict && !allMet) process.exitCode = 1;
