#!/usr/bin/env node
// Change feeds: partial-sync cost against the change log's length, delivery
// throughput to HTTP and NATS JetStream against the same clients driven
// directly, and the latency from a sync's recorded ref update to its arrival.
//
//   npm run bench:feeds               build, then: node --expose-gc bench/feeds.mjs
//   BENCH_QUICK=1                     100,000-row log, 3 repetitions, 1,000 events, 10 pushes (smoke test)
//   BENCH_FEEDS_LOG_ROWS=1000000      rows of the big change log
//   BENCH_FEEDS_SMALL_ROWS=100        rows of the small change log
//   BENCH_FEEDS_PARTIAL_CHANGES=100   changes appended before each timed partial sync
//   BENCH_FEEDS_PARTIAL_REPS=21       timed partial syncs per log (after one warm-up each; median shown)
//   BENCH_FEEDS_PARTIAL_SINK=file     sink of the partial-sync measure: file (NDJSON files) or http (the receiver)
//   BENCH_FEEDS_EVENTS=10000          events per throughput measurement
//   BENCH_FEEDS_ROUNDS=7              throughput rounds (after a warm-up round; median of per-round ratios)
//   BENCH_FEEDS_KEYS=1000             distinct change keys (source × ref) the generated changes cycle through
//   BENCH_FEEDS_PUSHES=50             pushes of the latency measure
//   BENCH_NATS_URL=nats://127.0.0.1:4222   JetStream server (BENCH_FEEDS_NATS=0 leaves NATS out)
//   BENCH_KEEP=1                      keep the temp directory (printed)
//   BENCH_STRICT=1                    exit 1 when a goal is missed
//
// Method:
//  - Every Forgesync instance is Forgesync.open on its own SQLite file in a
//    temp directory (FORGESYNC_ALLOW_NETWORKS=127.0.0.1/32 so that sinks may
//    reach this machine, FORGESYNC_INSTANCE_NAME=bench, logs at warn to a
//    file). Only the latency instance runs startService(); on the others no
//    job runs, so `feeds.sync(name, { wait: true })` does all the work, here.
//  - Changes are what a sync records for a moved ref (refChange() of
//    store/change-log.js: dev.forgesync.ref.updated, key "<source> <ref>"),
//    cycling over BENCH_FEEDS_KEYS keys (100 sources × 10 refs by default).
//  - The HTTP receiver is node:http in a child process (bench/lib/feeds-receiver.mjs,
//    a core of its own), answering 204 to every POST once its body is read.
//  1. Partial sync vs log length: two instances, one whose change log is
//     filled with BENCH_FEEDS_LOG_ROWS rows, one with BENCH_FEEDS_SMALL_ROWS,
//     both by multi-row INSERTs (500 rows a statement, 50,000 a transaction)
//     into change_log on the instance's own better-sqlite3 handle, change_head
//     set to the last number, the WAL checkpointed (truncated). A feed is then
//     added (cursor = head) and its initial full sync run to the end
//     (feeds.resync --wait). Each repetition appends BENCH_FEEDS_PARTIAL_CHANGES
//     changes (appendChanges in one transaction, untimed) and times
//     feeds.sync(feed, { wait: true }) — it returns the status after the run,
//     which must show lag 0. Warm-up first, then the two logs alternate (the
//     order swapping per repetition); ratio = median(big) / median(small).
//  2. Throughput: an instance per sink with one feed. A feed measurement
//     appends BENCH_FEEDS_EVENTS changes (untimed), then times
//     feeds.sync(feed, { wait: true }) (it ends when the status shows lag 0,
//     checked, and the receiver must have counted every event). Baselines in
//     the same round, on the same events (built untimed by changeEvent() from
//     the rows just appended), in groups of 500 (the feed's window: one
//     deliver call per pass, all keys distinct) one group after another:
//     - http raw: the same client the sink uses, without the feed: POSTs
//       through pinnedRequest (egress-checked, pinned to the checked address,
//       a keep-alive PinnedAgent of 8 sockets), one event per request (the
//       feed's batch 1), 8 in flight (the sink's concurrency), the same body
//       and content type; the goal is against it.
//     - http node (reference): plain node:http POSTs the same way, without
//       the egress check: what the egress-checked client costs.
//     - http sink (reference): the feed's sink object itself (openSink with
//       the feed's options), sink.deliver(group) one call at a time: what is
//       left of the feed's cost is its database work.
//     - nats raw: its own connection, js.publish(subject, body, { msgID })
//       for every event of the group, all written before the first ack is
//       awaited (the sink's pipelining), then every ack awaited: the loop a
//       user of NATS.js writes. The sink does not call js.publish (it
//       publishes on the same connection and protocol, with its acks read on
//       one reply subscription: sinks/jetstream-publisher.ts), so it runs
//       cheaper than this loop; the rows against the sink object show what
//       the feed costs on top of its sink.
//     - nats sink (reference): openSink('nats://…') and sink.deliver(group).
//     A unique stream (FSBENCH_<run>) takes the unique subjects fsbench.<run>.*
//     and is deleted at the end; its message count is checked after each
//     measurement. Baselines use event ids of their own (no deduplication).
//     One warm-up round, then BENCH_FEEDS_ROUNDS rounds in rotated order;
//     ratio = median over rounds of feed events/s ÷ raw events/s.
//  3. Latency: a bare upstream in the temp directory, pushed to with the git
//     CLI from a clone; the source added with replication.addSource, startService()
//     running, an http feed to the receiver. Per push: commit, git push, then
//     sync(source); the receiver timestamps each event's arrival. The
//     latency is arrival − the event's `time` (when the sync recorded the
//     change, just before its commit; milliseconds, so ±1 ms), and
//     arrival − sync resolving (approximate: delivery may even beat it).
// Results also go to bench/results/feeds.json.

import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { pathToFileURL } from 'node:url';
import { jetstream, jetstreamManager } from '@nats-io/jetstream';
import { connect as natsConnect } from '@nats-io/transport-node';
import { pino } from 'pino';
import { EgressPolicy, Forgesync, loadConfig } from '../dist/index.js';
import { changeEvent } from '../dist/feeds/changes.js';
import { changesAfter } from '../dist/feeds/store/changes.js';
import { outgoing } from '../dist/feeds/events.js';
import { openSink } from '../dist/feeds/sinks/open.js';
import { PinnedAgent, pinnedRequest } from '../dist/egress/http.js';
import { createLogger } from '../dist/logging/logger.js';
import { run, runBatch } from '../dist/store/batch.js';
import { appendChanges, headSeq, refChange } from '../dist/store/change-log.js';
import { sqliteHandle } from '../dist/store/connect.js';
import { startFeedsReceiver } from './lib/feeds-receiver-client.mjs';
import { git } from './lib/git-fleet.mjs';
import { collectGarbage, median, rotate, spreadPct, withDeadline } from './lib/harness.mjs';
import { GOAL_VS_RAW } from './lib/report.mjs';
import { describeError, intSetting, loads, log, progress, quick, reportLoad, table, writeResults } from './lib/util.mjs';

const env = process.env;
const cfg = {
  quick,
  logRows: intSetting('BENCH_FEEDS_LOG_ROWS', quick ? 100_000 : 1_000_000, 1),
  smallRows: intSetting('BENCH_FEEDS_SMALL_ROWS', 100, 1),
  partialChanges: intSetting('BENCH_FEEDS_PARTIAL_CHANGES', 100, 1),
  partialReps: intSetting('BENCH_FEEDS_PARTIAL_REPS', quick ? 3 : 21, 1),
  partialSink: env.BENCH_FEEDS_PARTIAL_SINK || 'file',
  events: intSetting('BENCH_FEEDS_EVENTS', quick ? 1000 : 10000, 1),
  rounds: intSetting('BENCH_FEEDS_ROUNDS', quick ? 1 : 7, 1),
  keys: intSetting('BENCH_FEEDS_KEYS', 1000, 1),
  pushes: intSetting('BENCH_FEEDS_PUSHES', quick ? 10 : 50, 1),
  natsUrl: env.BENCH_NATS_URL || 'nats://127.0.0.1:4222',
  nats: env.BENCH_FEEDS_NATS !== '0',
  keep: env.BENCH_KEEP === '1',
  strict: env.BENCH_STRICT === '1',
};
if (!['file', 'http'].includes(cfg.partialSink)) {
  console.error(`BENCH_FEEDS_PARTIAL_SINK must be file or http, got ${JSON.stringify(cfg.partialSink)}`);
  process.exit(2);
}
const GOALS = { partialRatio: 2, throughputVsRaw: GOAL_VS_RAW };
/** The feed's partial-sync window (runner: 500 changes a pass): the baselines deliver in groups of this size. */
const GROUP = 500;
/** The HTTP sink's requests in flight per deliver call (sinks/http.ts). */
const HTTP_CONCURRENCY = 8;
/** The feeds' delivery timeout (feedTimeout's default), also the baselines'. */
const TIMEOUT_MS = 10_000;
const INSTANCE = 'bench';

const runId = `${process.pid.toString(36)}${randomBytes(3).toString('hex')}`;
const root = mkdtempSync(join(os.tmpdir(), 'forgesync-bench-feeds-'));
const apps = [];
const closers = [];
let receiver;
let stream;

async function cleanup() {
  if (stream) await stream.remove().catch((error) => log(`deleting NATS stream ${stream.name} failed: ${describeError(error)}`));
  stream = undefined;
  for (const close of closers.splice(0).reverse()) await close().catch(() => {});
  for (const app of apps.splice(0)) await app.close().catch(() => {});
  receiver?.close();
  receiver = undefined;
  if (!cfg.keep) rmSync(root, { recursive: true, force: true });
}
process.once('exit', () => {
  receiver?.close();
  if (!cfg.keep) rmSync(root, { recursive: true, force: true });
});
process.once('SIGINT', async () => {
  console.error('\ninterrupted: cleaning up');
  await cleanup();
  process.exit(130);
});

// ---- fixtures ----

/** A Forgesync instance on its own data directory (SQLite file), logging at warn to a file. */
async function openInstance(name, extraEnv = {}) {
  const config = loadConfig({
    cwd: root,
    env: {
      FORGESYNC_DATA_DIR: join(root, name),
      FORGESYNC_GIT_PROTOCOLS: 'file',
      FORGESYNC_ALLOW_NETWORKS: '127.0.0.1/32',
      FORGESYNC_INSTANCE_NAME: INSTANCE,
      ...extraEnv,
    },
  });
  const app = await Forgesync.open(config, { logger: createLogger({ level: 'warn', destination: pino.destination(join(root, `${name}.log`)) }) });
  apps.push(app);
  return app;
}

const sources = Math.max(1, Math.ceil(cfg.keys / 10));
const hex40 = (n) => n.toString(16).padStart(40, '0');
/** The n-th generated change: ref refs/heads/b<k % 10> of source repo-<k / 10> moves (k = n % keys). */
function changeInput(n) {
  const k = n % cfg.keys;
  return refChange(`repo-${String(Math.floor(k / 10)).padStart(4, '0')}`, { ref: `refs/heads/b${k % 10}`, before: hex40(n), after: hex40(n + 1), forced: false });
}

/** Appends `count` generated changes numbered from `from` in one transaction, as a writer does. */
async function appendGenerated(app, from, count) {
  const db = app.kernel.database.db;
  const changes = Array.from({ length: count }, (_, i) => changeInput(from + i));
  await runBatch(db, function* () {
    for (const statement of appendChanges(db, changes, Date.now())) yield* run(statement.query, ...statement.args);
  });
}

/** Fills an empty change log with `rows` generated changes by direct multi-row INSERTs; returns the ms taken. */
function fillChangeLog(app, rows) {
  const t0 = performance.now();
  const { raw } = sqliteHandle(app.kernel.database.db);
  const PER_STATEMENT = 500;
  const PER_TRANSACTION = 50_000;
  const columns = '(seq, type, module, scope, change_key, subject, data, recorded_at)';
  const tuple = '(?, ?, ?, ?, ?, ?, ?, ?)';
  const statements = new Map();
  const insert = (n) => {
    let statement = statements.get(n);
    if (!statement) statements.set(n, (statement = raw.prepare(`INSERT INTO change_log ${columns} VALUES ${Array(n).fill(tuple).join(', ')}`)));
    return statement;
  };
  const now = Date.now();
  const transaction = raw.transaction((from, to) => {
    for (let start = from; start < to; start += PER_STATEMENT) {
      const n = Math.min(PER_STATEMENT, to - start);
      const args = new Array(n * 8);
      for (let i = 0; i < n; i++) {
        const seq = start + i + 1;
        const change = changeInput(seq);
        const at = i * 8;
        args[at] = seq;
        args[at + 1] = change.type;
        args[at + 2] = change.module;
        args[at + 3] = change.scope;
        args[at + 4] = change.key;
        args[at + 5] = change.subject;
        args[at + 6] = JSON.stringify(change.data);
        args[at + 7] = now;
      }
      insert(n).run(args);
    }
  });
  for (let from = 0; from < rows; from += PER_TRANSACTION) {
    transaction(from, Math.min(rows, from + PER_TRANSACTION));
    progress(`filling the change log: ${Math.min(rows, from + PER_TRANSACTION).toLocaleString('en-US')} / ${rows.toLocaleString('en-US')} rows`);
  }
  raw.prepare('UPDATE change_head SET seq = ? WHERE id = 1').run(rows);
  raw.pragma('wal_checkpoint(TRUNCATE)');
  return performance.now() - t0;
}

/** Adds feed `name` on `sink` and runs its initial full sync to the end; its cursor is then the head. */
async function addFeed(app, name, sink) {
  await app.feeds.add({ name, sink });
  const status = await app.feeds.resync(name, { wait: true, timeoutMs: 120_000 });
  if (status.fullSync.requested || status.fullSync.running || status.lag.changes !== 0) {
    throw new Error(`feed ${name}: the initial full sync did not finish (${JSON.stringify(status.fullSync)}, lag ${status.lag.changes}, last error ${status.lastError})`);
  }
  return status;
}

/** Times feeds.sync(name, { wait: true }); checks the status it returns shows nothing left. */
async function timedSync(app, name, expectDelivered) {
  const before = (await app.feeds.status(name)).delivered;
  collectGarbage();
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  const status = await app.feeds.sync(name, { wait: true, timeoutMs: 120_000 });
  const ms = performance.now() - t0;
  const cpu = process.cpuUsage(cpu0);
  if (status.lag.changes !== 0) throw new Error(`feed ${name}: lag ${status.lag.changes} after sync --wait (last error: ${status.lastError})`);
  if (status.delivered - before !== expectDelivered) throw new Error(`feed ${name}: delivered ${status.delivered - before}, expected ${expectDelivered} (last error: ${status.lastError})`);
  return { ms, cpuMs: (cpu.user + cpu.system) / 1000 };
}

/** The last `count` changes of `app`'s log as the events a feed would send, in groups of GROUP. */
async function eventGroups(app, count) {
  const db = app.kernel.database.db;
  const head = await headSeq(db);
  const rows = await changesAfter(db, head - count, count);
  const events = rows.map((row) => changeEvent(INSTANCE, row));
  const groups = [];
  for (let at = 0; at < events.length; at += GROUP) groups.push(events.slice(at, at + GROUP));
  return groups;
}

/** `events` with ids of their own (`<prefix>:<seq>`), so a stream does not drop them as duplicates. */
function renamed(groups, prefix) {
  return groups.map((group) => group.map(({ event, key }) => outgoing({ ...event, id: `${prefix}:${event.sequence}` }, key)));
}

/** Runs `work` on every item, `limit` at once (as sinks/outcomes.ts runLimited). */
async function runLimited(items, limit, work) {
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(limit, items.length) }, async () => {
      while (next < items.length) await work(items[next++]);
    }),
  );
}

/** Times `fn` (wall and CPU of this process). */
async function timed(fn) {
  collectGarbage();
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  await fn();
  const ms = performance.now() - t0;
  const cpu = process.cpuUsage(cpu0);
  return { ms, cpuMs: (cpu.user + cpu.system) / 1000 };
}

const percentile = (sorted, q) => sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))];

// ---- run ----

const startedAt = performance.now();
const gitVersion = (await git(['--version'])).trim();
log(
  `forgesync feeds benchmark — node ${process.version}, ${gitVersion}, ${os.cpus().length} CPUs (${os.cpus()[0]?.model ?? '?'}), ` +
    `gc ${typeof globalThis.gc === 'function' ? 'forced before each measurement' : 'NOT exposed (run with --expose-gc)'}`,
);
log(
  `partial sync: ${cfg.partialChanges} changes, logs of ${cfg.logRows.toLocaleString('en-US')} vs ${cfg.smallRows.toLocaleString('en-US')} rows, ` +
    `${cfg.partialReps} repetitions, ${cfg.partialSink} sink; throughput: ${cfg.events.toLocaleString('en-US')} events × ${cfg.rounds} round(s), ` +
    `${cfg.keys} keys; latency: ${cfg.pushes} pushes; temp dir ${root}`,
);
const loadAtStart = os.loadavg();
log(`load average at start: ${loads(loadAtStart)}`);
const sampledLoads = [];
const results = { partial: null, http: null, nats: null, latency: null };
let failure;
let natsSkipped;

try {
  receiver = await startFeedsReceiver();

  // ---- 1. partial sync vs log length ----
  progress('opening the partial-sync instances');
  // A file sink writes inside its instance's feed file root (<dataDir>/feeds).
  const partialSinkUrl = (name) => (cfg.partialSink === 'http' ? receiver.url(`partial-${name}`) : pathToFileURL(join(root, `partial-${name}`, 'feeds', 'out')).href);
  const logs = [];
  for (const [label, rows] of [
    ['big', cfg.logRows],
    ['small', cfg.smallRows],
  ]) {
    const app = await openInstance(`partial-${label}`);
    const fillMs = fillChangeLog(app, rows);
    await addFeed(app, 'partial', partialSinkUrl(label));
    logs.push({ label, rows, app, fillMs, next: rows + 1, samples: [] });
  }
  progress('');
  log(`change logs filled: ${logs.map((l) => `${l.rows.toLocaleString('en-US')} rows in ${(l.fillMs / 1000).toFixed(1)} s`).join(', ')}`);
  for (let rep = 0; rep <= cfg.partialReps; rep++) {
    for (const entry of rep % 2 ? [...logs].reverse() : logs) {
      progress(`partial sync ${rep === 0 ? 'warm-up' : `${rep}/${cfg.partialReps}`}: ${entry.label} log`);
      await appendGenerated(entry.app, entry.next, cfg.partialChanges);
      entry.next += cfg.partialChanges;
      const sample = await timedSync(entry.app, 'partial', cfg.partialChanges);
      if (rep > 0) entry.samples.push(sample);
    }
    sampledLoads.push(os.loadavg()[0]);
  }
  progress('');
  const [big, small] = logs;
  const bigMs = median(big.samples.map((s) => s.ms));
  const smallMs = median(small.samples.map((s) => s.ms));
  results.partial = {
    bigRows: big.rows,
    smallRows: small.rows,
    bigMs,
    smallMs,
    bigCpuMs: median(big.samples.map((s) => s.cpuMs)),
    smallCpuMs: median(small.samples.map((s) => s.cpuMs)),
    ratio: bigMs / smallMs,
    pairedRatio: median(big.samples.map((s, i) => s.ms / small.samples[i].ms)),
    spreadPct: { big: spreadPct(big.samples.map((s) => s.ms)), small: spreadPct(small.samples.map((s) => s.ms)) },
    samples: { big: big.samples, small: small.samples },
  };
  results.partial.met = results.partial.ratio <= GOALS.partialRatio;
  for (const entry of logs) {
    await entry.app.close();
    apps.splice(apps.indexOf(entry.app), 1);
  }

  // ---- 2. throughput ----
  const policy = new EgressPolicy({ allowNetworks: ['127.0.0.1/32'] });
  const sinkOptions = (batch) => ({ batch, timeoutMs: TIMEOUT_MS, policy });

  /** Runs warm-up + rounds of the contenders; each returns { ms, cpuMs } for `count` events. */
  async function throughput(label, contenders) {
    const samples = Object.fromEntries(contenders.map((c) => [c.name, []]));
    for (let round = 0; round <= cfg.rounds; round++) {
      const count = round === 0 ? Math.min(cfg.events, 1000) : cfg.events;
      for (const c of rotate(contenders, round)) {
        progress(`${label} throughput ${round === 0 ? 'warm-up' : `round ${round}/${cfg.rounds}`}: ${c.name}`);
        const sample = await c.run(count, round);
        if (round > 0) samples[c.name].push({ ...sample, eventsPerSec: (count * 1000) / sample.ms, cpuUsPerEvent: (sample.cpuMs * 1000) / count });
      }
      sampledLoads.push(os.loadavg()[0]);
    }
    progress('');
    const summary = {};
    for (const c of contenders) {
      const s = samples[c.name];
      summary[c.name] = {
        describe: c.describe,
        eventsPerSec: median(s.map((x) => x.eventsPerSec)),
        cpuUsPerEvent: median(s.map((x) => x.cpuUsPerEvent)),
        spreadPct: spreadPct(s.map((x) => x.eventsPerSec)),
        vsRaw: median(s.map((x, r) => x.eventsPerSec / samples.raw[r].eventsPerSec)),
        samples: s,
      };
    }
    // What the feed machinery (reading, building, bookkeeping) costs on top of its sink, round by round.
    const feedVsSink = median(samples.feed.map((x, r) => x.eventsPerSec / samples.sink[r].eventsPerSec));
    return { contenders: summary, ratio: summary.feed.vsRaw, feedVsSink, met: summary.feed.vsRaw >= GOALS.throughputVsRaw };
  }

  // HTTP
  {
    const app = await openInstance('throughput-http');
    const feedUrl = receiver.url('feed');
    await addFeed(app, 'http', feedUrl);
    let next = 1;
    let groups;
    /** The events of the last feed measurement (built once it delivered them), for the baselines. */
    const eventsFor = async (count) => {
      if (!groups || groups.flat().length !== count) groups = await eventGroups(app, count);
      return groups;
    };
    const expectCount = async (what, count) => {
      const { events } = await receiver.count();
      if (events !== count) throw new Error(`http ${what}: the receiver got ${events} events, expected ${count}`);
    };
    const sink = await openSink(feedUrl, sinkOptions(1));
    closers.push(() => sink.close());
    const agent = new http.Agent({ keepAlive: true, maxSockets: HTTP_CONCURRENCY });
    closers.push(async () => agent.destroy());
    // The sink's own client: every request through the egress policy, pinned to the checked address.
    const rawUrl = new URL(receiver.url('raw'));
    const pinned = new PinnedAgent('http:', await policy.resolve(rawUrl.hostname), HTTP_CONCURRENCY);
    closers.push(async () => pinned.close());
    const clientPost = async (body) => {
      const response = await pinnedRequest(rawUrl, {
        policy: policy,
        method: 'POST',
        headers: { 'content-type': 'application/cloudevents+json', 'user-agent': 'forgesync-bench' },
        body,
        timeoutMs: TIMEOUT_MS,
        agent: pinned,
      });
      if (response.status < 200 || response.status >= 300) throw new Error(`HTTP ${response.status}`);
    };
    const post = (body) =>
      new Promise((resolve, reject) => {
        const req = http.request(
          {
            host: '127.0.0.1',
            port: receiver.port,
            path: '/raw',
            method: 'POST',
            agent,
            timeout: TIMEOUT_MS,
            headers: { 'content-type': 'application/cloudevents+json', 'user-agent': 'forgesync-bench', 'content-length': Buffer.byteLength(body) },
          },
          (res) => {
            res.resume();
            res.on('end', () => (res.statusCode >= 200 && res.statusCode < 300 ? resolve() : reject(new Error(`HTTP ${res.statusCode}`))));
          },
        );
        req.on('timeout', () => req.destroy(new Error('timed out')));
        req.on('error', reject);
        req.end(body);
      });
    // The baselines need events: one feed delivery first (untimed) so that they exist whatever the order.
    await appendGenerated(app, next, cfg.events);
    next += cfg.events;
    await app.feeds.sync('http', { wait: true });
    results.http = await throughput('http', [
      {
        name: 'feed',
        describe: 'forgesync feed (http sink, batch 1): changes appended, then feeds.sync(name, { wait: true }) until lag 0',
        async run(count) {
          await appendGenerated(app, next, count);
          next += count;
          await receiver.reset();
          const sample = await timedSync(app, 'http', count);
          await expectCount('feed', count);
          groups = undefined;
          return sample;
        },
      },
      {
        name: 'raw',
        describe: `the sink's HTTP client without the feed: pinnedRequest POSTs (egress-checked, pinned, keep-alive PinnedAgent), one event each, ${HTTP_CONCURRENCY} in flight, in groups of ${GROUP}`,
        async run(count) {
          const list = await eventsFor(count);
          await receiver.reset();
          const sample = await timed(async () => {
            for (const group of list) await runLimited(group, HTTP_CONCURRENCY, (entry) => clientPost(entry.body));
          });
          await expectCount('raw', count);
          return sample;
        },
      },
      {
        name: 'node',
        describe: `plain node:http POSTs, one event each, ${HTTP_CONCURRENCY} in flight on a keep-alive Agent (maxSockets ${HTTP_CONCURRENCY}), in groups of ${GROUP} (reference, no goal: no egress check)`,
        async run(count) {
          const list = await eventsFor(count);
          await receiver.reset();
          const sample = await timed(async () => {
            for (const group of list) await runLimited(group, HTTP_CONCURRENCY, (entry) => post(entry.body));
          });
          await expectCount('node', count);
          return sample;
        },
      },
      {
        name: 'sink',
        describe: `the feed's sink object (openSink, batch 1): sink.deliver(group of ${GROUP}) one call at a time (reference, no goal)`,
        async run(count) {
          const list = await eventsFor(count);
          await receiver.reset();
          const signal = new AbortController().signal;
          const sample = await timed(async () => {
            for (const group of list) {
              const outcomes = await sink.deliver(group, signal);
              const bad = outcomes.find((o) => !o.ok);
              if (bad) throw new Error(`http sink: ${bad.error}`);
            }
          });
          await expectCount('sink', count);
          return sample;
        },
      },
    ]);
    await app.close();
    apps.splice(apps.indexOf(app), 1);
  }

  // NATS
  if (!cfg.nats) natsSkipped = 'BENCH_FEEDS_NATS=0';
  else {
    const natsUrl = new URL(cfg.natsUrl);
    const server = `${natsUrl.hostname}:${natsUrl.port || 4222}`;
    let nc;
    try {
      nc = await natsConnect({ servers: server, timeout: 2000, maxReconnectAttempts: 0, name: 'forgesync-bench', noAsyncTraces: true });
    } catch (error) {
      natsSkipped = `unreachable: ${describeError(error)}`;
      log(
        `ERROR: NATS at ${server} is unreachable (${describeError(error)}) — the NATS throughput is not measured; ` +
          'start a JetStream server (nats-server -js), point BENCH_NATS_URL at one, or leave NATS out with BENCH_FEEDS_NATS=0',
      );
    }
    let jsm;
    if (nc) {
      closers.push(() => nc.drain());
      try {
        jsm = await jetstreamManager(nc, { timeout: 5000 });
      } catch (error) {
        natsSkipped = `JetStream not usable: ${describeError(error)}`;
        log(`ERROR: NATS at ${server} answers but JetStream is not usable (${describeError(error)}) — the NATS throughput is not measured; start nats-server with -js`);
      }
    }
    if (jsm) {
      const name = `FSBENCH_${runId}`;
      const prefix = `fsbench.${runId}`;
      await jsm.streams.add({ name, subjects: [`${prefix}.>`] });
      stream = { name, remove: () => jsm.streams.delete(name) };
      let expected = 0;
      const expectMessages = async (what, added) => {
        expected += added;
        const info = await jsm.streams.info(name);
        if (info.state.messages !== expected) throw new Error(`nats ${what}: the stream holds ${info.state.messages} messages, expected ${expected}`);
      };
      const js = jetstream(nc);
      const app = await openInstance('throughput-nats');
      const feedUrl = `nats://${server}/${prefix}.feed`;
      await addFeed(app, 'nats', feedUrl);
      const sink = await openSink(`nats://${server}/${prefix}.sink`, sinkOptions(100));
      closers.push(() => sink.close());
      let next = 1;
      let groups;
      const eventsFor = async (count) => {
        if (!groups || groups.flat().length !== count) groups = await eventGroups(app, count);
        return groups;
      };
      await appendGenerated(app, next, cfg.events);
      next += cfg.events;
      await app.feeds.sync('nats', { wait: true });
      await expectMessages('first delivery', cfg.events);
      results.nats = await throughput('nats', [
        {
          name: 'feed',
          describe: 'forgesync feed (nats sink): changes appended, then feeds.sync(name, { wait: true }) until lag 0',
          async run(count) {
            await appendGenerated(app, next, count);
            next += count;
            const sample = await timedSync(app, 'nats', count);
            await expectMessages('feed', count);
            groups = undefined;
            return sample;
          },
        },
        // The raw connection has the options the sink's has that cost CPU per publish (noAsyncTraces,
        // see sinks/nats.ts): should the sink change one, this baseline must follow.
        {
          name: 'raw',
          describe: `js.publish(subject, body, { msgID }) on a connection of its own, a group of ${GROUP} written before its acks are awaited (the sink's pipelining)`,
          async run(count, round) {
            const list = renamed(await eventsFor(count), `raw-${round}`);
            const subject = `${prefix}.raw`;
            const sample = await timed(async () => {
              for (const group of list) await Promise.all(group.map((entry) => js.publish(subject, entry.body, { msgID: entry.event.id, timeout: TIMEOUT_MS })));
            });
            await expectMessages('raw', count);
            return sample;
          },
        },
        {
          name: 'sink',
          describe: `the feed's sink object (openSink nats://…): sink.deliver(group of ${GROUP}) one call at a time (reference, no goal)`,
          async run(count, round) {
            const list = renamed(await eventsFor(count), `sink-${round}`);
            const signal = new AbortController().signal;
            const sample = await timed(async () => {
              for (const group of list) {
                const outcomes = await sink.deliver(group, signal);
                const bad = outcomes.find((o) => !o.ok);
                if (bad) throw new Error(`nats sink: ${bad.error}`);
              }
            });
            await expectMessages('sink', count);
            return sample;
          },
        },
      ]);
      await app.close();
      apps.splice(apps.indexOf(app), 1);
    }
  }

  // ---- 3. end-to-end latency ----
  {
    progress('latency: creating the upstream');
    const upstream = join(root, 'upstream.git');
    const work = join(root, 'work');
    await git(['init', '--quiet', '--bare', '--initial-branch=main', upstream]);
    await git(['init', '--quiet', '--initial-branch=main', work]);
    const inWork = (args) => git(['-C', work, '-c', 'user.name=Bench', '-c', 'user.email=bench@example.com', ...args]);
    await inWork(['commit', '--quiet', '--allow-empty', '-m', 'initial']);
    await inWork(['push', '--quiet', upstream, 'main']);
    const app = await openInstance('latency');
    await app.startService();
    await app.replication.addSource({ url: upstream, name: 'e2e' });
    const first = await app.replication.sync('e2e', { trigger: 'library', timeoutMs: 60_000 });
    if (!first.served) throw new Error(`latency: the first sync of the upstream failed: ${first.registry.lastFailure}`);
    await app.feeds.add({ name: 'e2e', sink: receiver.url('e2e') });
    for (const deadline = Date.now() + 60_000; ; ) {
      const status = await app.feeds.status('e2e');
      if (!status.fullSync.requested && !status.fullSync.running && status.lag.changes === 0) break;
      if (Date.now() > deadline) throw new Error(`latency: the feed's initial full sync did not finish (last error: ${status.lastError})`);
      await sleep(20);
    }
    // The nudge after a sync reaches the feeds a poll saw active.
    await app.feeds.poll();
    await receiver.report(true);
    const arrivals = new Map();
    const waiters = new Map();
    const stopListening = receiver.onEvent((event) => {
      if (event.type !== 'dev.forgesync.ref.updated' || event.data?.ref !== 'refs/heads/main') return;
      arrivals.set(event.data.after, event);
      waiters.get(event.data.after)?.(event);
    });
    const samples = [];
    for (let i = 1; i <= cfg.pushes; i++) {
      progress(`latency: push ${i}/${cfg.pushes}`);
      await inWork(['commit', '--quiet', '--allow-empty', '-m', `push ${i}`]);
      await inWork(['push', '--quiet', upstream, 'main']);
      const sha = (await inWork(['rev-parse', 'HEAD'])).trim();
      const arrived = arrivals.has(sha) ? Promise.resolve(arrivals.get(sha)) : new Promise((resolve) => waiters.set(sha, resolve));
      const t0 = performance.timeOrigin + performance.now();
      const result = await app.replication.sync('e2e', { trigger: 'library', timeoutMs: 60_000 });
      const resolvedAt = performance.timeOrigin + performance.now();
      if (!result.served) throw new Error(`latency: sync ${i} failed: ${result.registry.lastFailure}`);
      const event = await withDeadline(arrived, 30_000, `the event of push ${i} (${sha.slice(0, 12)})`);
      waiters.delete(sha);
      const recordedAt = Date.parse(event.time);
      samples.push({ push: i, syncMs: resolvedAt - t0, fromRecordedMs: event.arrivedAt - recordedAt, fromResolvedMs: event.arrivedAt - resolvedAt });
    }
    stopListening();
    await receiver.report(false);
    progress('');
    const sorted = (key) => samples.map((s) => s[key]).sort((a, b) => a - b);
    const recorded = sorted('fromRecordedMs');
    const resolved = sorted('fromResolvedMs');
    const syncs = sorted('syncMs');
    results.latency = {
      pushes: samples.length,
      fromRecorded: { p50: percentile(recorded, 0.5), p99: percentile(recorded, 0.99), max: recorded[recorded.length - 1] },
      fromResolved: { p50: percentile(resolved, 0.5), p99: percentile(resolved, 0.99), max: resolved[resolved.length - 1] },
      syncMs: { p50: percentile(syncs, 0.5), p99: percentile(syncs, 0.99) },
      samples,
    };
  }
} catch (error) {
  progress('');
  failure = describeError(error);
  log(`run failed: ${failure}`);
  if (error?.stack) console.error(error.stack);
}

// ---- report ----
const int = (n) => Math.round(n).toLocaleString('en-US');
const x = (n) => `${n.toFixed(2)}×`;
const msText = (n) => (Math.abs(n) < 10 ? n.toFixed(2) : n.toFixed(1));
const yes = (met) => (met ? 'yes' : 'NO');
const rows = [];
const p = results.partial;
if (p) {
  rows.push([
    `partial sync of ${cfg.partialChanges} changes: ${int(p.bigRows)}-row log vs ${int(p.smallRows)}-row log`,
    `${msText(p.bigMs)} ms`,
    `${msText(p.smallMs)} ms`,
    x(p.ratio),
    `≤ ${x(GOALS.partialRatio)}`,
    yes(p.met),
  ]);
}
for (const [kind, r] of [
  ['http', results.http],
  ['nats', results.nats],
]) {
  if (!r) {
    if (kind === 'nats' && natsSkipped) rows.push(['nats throughput: feed vs js.publish (msgID, pipelined)', '-', '-', '-', `≥ ${x(GOALS.throughputVsRaw)}`, `skipped (${natsSkipped})`]);
    continue;
  }
  const { feed, raw, sink } = r.contenders;
  rows.push([
    kind === 'http' ? 'http throughput: feed vs its client alone (pinnedRequest, keep-alive, 8 in flight)' : 'nats throughput: feed vs js.publish (msgID, pipelined)',
    `${int(feed.eventsPerSec)} ev/s`,
    `${int(raw.eventsPerSec)} ev/s`,
    x(r.ratio),
    `≥ ${x(GOALS.throughputVsRaw)}`,
    yes(r.met),
  ]);
  rows.push([`  ${kind} reference: the sink object, sink.deliver per group`, `${int(sink.eventsPerSec)} ev/s`, `${int(raw.eventsPerSec)} ev/s`, x(sink.vsRaw), '-', '-']);
  rows.push([`  ${kind} reference: the feed vs its sink object alone (the feed machinery's cost)`, `${int(feed.eventsPerSec)} ev/s`, `${int(sink.eventsPerSec)} ev/s`, x(r.feedVsSink), '-', '-']);
  const node = r.contenders.node;
  if (node) rows.push([`  http reference: plain node:http (no egress check) vs the client`, `${int(node.eventsPerSec)} ev/s`, `${int(raw.eventsPerSec)} ev/s`, x(node.vsRaw), '-', '-']);
}
const l = results.latency;
if (l) {
  rows.push([`e2e latency p50: change recorded → arrival (${l.pushes} pushes)`, `${msText(l.fromRecorded.p50)} ms`, '-', '-', '-', '-']);
  rows.push([`e2e latency p99: change recorded → arrival`, `${msText(l.fromRecorded.p99)} ms`, '-', '-', '-', '-']);
  rows.push([`  sync() resolved → arrival p50 / p99`, `${msText(l.fromResolved.p50)} / ${msText(l.fromResolved.p99)} ms`, '-', '-', '-', '-']);
}
log('');
if (rows.length) {
  // A Markdown table.
  const header = ['measure', 'forgesync', 'baseline', 'ratio', 'goal', 'met?'];
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => String(r[i]).length)));
  const line = (cells) => `| ${cells.map((c, i) => (i === 0 ? String(c).padEnd(widths[i]) : String(c).padStart(widths[i]))).join(' | ')} |`;
  log(line(header));
  log(`| ${widths.map((w, i) => (i === 0 ? '-'.repeat(w) : `${'-'.repeat(w - 1)}:`)).join(' | ')} |`);
  for (const r of rows) log(line(r));
}
if (p) {
  log('');
  log(
    `partial sync: medians of ${cfg.partialReps} (${cfg.partialSink} sink); CPU of this process ${msText(p.bigCpuMs)} vs ${msText(p.smallCpuMs)} ms; ` +
      `median of paired ratios ${x(p.pairedRatio)}; spread ±${Math.round(p.spreadPct.big)}% / ±${Math.round(p.spreadPct.small)}%`,
  );
  log(`  per repetition big/small ms: ${p.samples.big.map((s, i) => `${msText(s.ms)}/${msText(p.samples.small[i].ms)}`).join(', ')}`);
}
for (const [kind, r] of [
  ['http', results.http],
  ['nats', results.nats],
]) {
  if (!r) continue;
  log('');
  log(
    table(
      [`${kind} throughput`, 'events/s', 'spread', 'vs raw', 'CPU µs/event'],
      Object.entries(r.contenders).map(([name, c]) => [name, int(c.eventsPerSec), `±${Math.round(c.spreadPct)}%`, x(c.vsRaw), c.cpuUsPerEvent.toFixed(1)]),
    ),
  );
  for (const [name, c] of Object.entries(r.contenders)) log(`  ${name}: ${c.describe}`);
}
if (l) {
  log('');
  log(
    `latency: ${l.pushes} pushes; recorded → arrival p50 ${msText(l.fromRecorded.p50)}, p99 ${msText(l.fromRecorded.p99)}, max ${msText(l.fromRecorded.max)} ms ` +
      `(event time has ms resolution); sync() ${msText(l.syncMs.p50)} ms p50, ${msText(l.syncMs.p99)} ms p99`,
  );
}
log('  (ratios of throughput are medians over rounds of the ratio within the round; spread = (max - min) / median)');
const loadAtEnd = reportLoad(loadAtStart, sampledLoads);
// NATS left out on purpose (BENCH_FEEDS_NATS=0) is not a miss; NATS unreachable is.
const natsUnreachable = cfg.nats && natsSkipped !== undefined;
const goals = [p?.met, results.http?.met, ...(cfg.nats ? [results.nats?.met] : [])];
const allMet = !failure && !natsUnreachable && goals.every((met) => met === true);
log(
  `goals: ${failure ? 'run FAILED' : allMet ? 'all met' : 'NOT all met'}${cfg.nats ? '' : ' (NATS left out)'}` +
    `${natsUnreachable ? ' (NATS unreachable: not measured)' : ''} (${((performance.now() - startedAt) / 1000).toFixed(0)} s)`,
);

const file = writeResults('feeds', {
  date: new Date().toISOString(),
  node: process.version,
  git: gitVersion,
  cpus: os.cpus().length,
  cpuModel: os.cpus()[0]?.model,
  gcForced: typeof globalThis.gc === 'function',
  loadAverage: { start: loadAtStart, end: loadAtEnd },
  config: { ...cfg, goals: GOALS },
  status: failure ? 'failed' : 'ran',
  ...(failure ? { reason: failure } : {}),
  ...(natsSkipped ? { natsSkipped } : {}),
  results,
  goalsMet: allMet,
});
log(`results written to ${file}`);
await cleanup();
if (cfg.keep) log(`kept ${root}`);
if (failure || natsUnreachable) process.exitCode = 1;
else if (cfg.strict && !allMet) process.exitCode = 1;
