// Sync throughput of bench/scale.mjs: 1, 2 and 4 `forgesync serve --role
// worker` processes sharing one shard's queue, no-op and changed rounds over
// every source. See the method in bench/scale.mjs's header.
import { readFileSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { median } from './harness.mjs';
import { addCommit, pool } from './git-fleet.mjs';
import { requestAll } from './scale-cluster.mjs';
import { cpuMsOf } from './webhooks-procs.mjs';
import { progress } from './util.mjs';

/** The machine's CPU time so far from /proc/stat's first line: { busy, total } in clock ticks. */
function machineCpu() {
  const fields = readFileSync('/proc/stat', 'utf8').split('\n')[0].trim().split(/\s+/).slice(1, 9).map(Number);
  const idle = fields[3] + fields[4]; // idle + iowait
  const total = fields.reduce((a, b) => a + b, 0);
  return { busy: total - idle, total };
}

/** Attempts recorded since `sinceMs`, by result. */
async function attemptsSince(cluster, sinceMs) {
  const rows = await cluster.query(`select result, count(*)::int as n from sync_attempts where started_at >= $1 group by result`, [sinceMs]);
  return Object.fromEntries(rows.map((r) => [r.result ?? 'unfinished', r.n]));
}

/**
 * One round: (changed: a new commit on every upstream first, untimed) then a
 * request for every source; timed from the first request until every row is
 * caught up. The workers' CPU (not their git children's) and the whole
 * machine's busy share are read from /proc.
 */
async function round(cluster, kind, label) {
  if (kind === 'changed') {
    progress(`${label}: a commit on every upstream`);
    await pool(cluster.upstreams, 8, (upstream) => addCommit(upstream, `scale ${label} ${Date.now()}`));
  }
  progress(`${label}: requesting ${cluster.names.length} syncs`);
  const pids = cluster.workers.map((w) => w.child.pid);
  const cpuBefore = pids.map(cpuMsOf);
  const machineBefore = machineCpu();
  const wallStart = Date.now();
  const t0 = performance.now();
  await requestAll(cluster);
  const requestedMs = performance.now() - t0;
  await cluster.waitCaughtUp(300_000, 10);
  const ms = performance.now() - t0;
  const workerCpuMs = pids.reduce((sum, pid, i) => sum + cpuMsOf(pid) - cpuBefore[i], 0);
  const machineAfter = machineCpu();
  // Near 100 %: the round was CPU-bound on the whole machine (this run's processes, and anyone else's).
  const machineBusyPct = (100 * (machineAfter.busy - machineBefore.busy)) / Math.max(1, machineAfter.total - machineBefore.total);
  const attempts = await attemptsSince(cluster, wallStart);
  // A changed round must have fetched every source, a no-op round none (ls-remote only).
  const fetched = attempts.synced ?? 0;
  const expected = kind === 'changed' ? cluster.names.length : 0;
  if (kind === 'changed' ? fetched < expected : fetched > 0) throw new Error(`${label}: ${fetched} attempts fetched (result "synced"), expected ${expected}: ${JSON.stringify(attempts)}`);
  return { ms, requestedMs, syncsPerSec: (cluster.names.length * 1000) / ms, workerCpuMsPerSync: workerCpuMs / cluster.names.length, machineBusyPct, attempts };
}

/**
 * `forgesync sync --all`: requestSyncMany('all') records a request on every row in one
 * UPDATE and leaves the nudging to the active scheduler, which hands out at
 * most the workers' room (2 × their capacity, less what runs and waits) per
 * tick. Timed for `seconds` (or until done): syncs/s = rows caught up ÷ time.
 * Then every source is requested directly, so the rest catch up fast.
 */
async function resyncWindow(cluster, seconds, label) {
  progress(`${label}: sync --all through the scheduler`);
  const t0 = performance.now();
  await cluster.library().replication.requestSyncMany('all', { trigger: 'manual' });
  let done = 0;
  let n = cluster.names.length;
  while (performance.now() - t0 < seconds * 1000) {
    ({ done, n } = await cluster.caughtUp());
    if (done === n) break;
    await sleep(20);
  }
  const ms = performance.now() - t0;
  await requestAll(cluster);
  await cluster.waitCaughtUp(300_000, 10);
  return { ms, caughtUp: done, syncsPerSec: (done * 1000) / ms };
}

/**
 * Runs `reps` rounds of each kind (after one untimed warm-up no-op round) with
 * each worker count in `counts` (ascending: workers are added between steps).
 * Returns [{ workers, noop, changed }], each kind with the median syncs/s and its rounds.
 */
export async function measureThroughput(cluster, { counts, reps, resyncSeconds }) {
  const results = [];
  for (const workers of counts) {
    while (cluster.workers.length < workers) {
      progress(`starting worker ${cluster.workers.length + 1}`);
      await cluster.startWorker();
    }
    await round(cluster, 'noop', `${workers} worker(s) warm-up`);
    const entry = { workers, noop: { rounds: [] }, changed: { rounds: [] } };
    // The kinds alternate so that a slow spell of the machine does not hit only one of them.
    for (let rep = 0; rep < reps; rep++) {
      for (const kind of ['noop', 'changed']) entry[kind].rounds.push(await round(cluster, kind, `${workers} worker(s) ${kind} ${rep + 1}/${reps}`));
    }
    for (const kind of ['noop', 'changed']) {
      const { rounds } = entry[kind];
      entry[kind].syncsPerSec = median(rounds.map((r) => r.syncsPerSec));
      entry[kind].workerCpuMsPerSync = median(rounds.map((r) => r.workerCpuMsPerSync));
      entry[kind].machineBusyPct = median(rounds.map((r) => r.machineBusyPct));
    }
    if (resyncSeconds > 0) entry.syncAll = await resyncWindow(cluster, resyncSeconds, `${workers} worker(s)`);
    results.push(entry);
  }
  progress('');
  return results;
}
