// What bench/soak.mjs samples of the `forgesync serve` child, and its verdict:
// a least-squares line through each series after the warm-up.
import { execFile } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { request } from './import-freshness-poll.mjs';
import { rssOf } from './serve-procs.mjs';
import { mib } from './util.mjs';

/** The goals (see the file head of bench/soak.mjs for why these numbers). */
export const GOALS = {
  rssMibPerHour: 10,
  heapMibPerHour: 5,
  fdSpread: 10,
  /** Data-dir growth allowed per unit of work retained (a commit, an imported change): objects, refs, change-log and attempt rows. */
  dataBytesPerChange: 64 * 1024,
  /** Plus this much whatever the work: the SQLite WAL before its checkpoint, the snapshot cache (≤ 50 small trees), the pack cache. */
  dataSlackBytes: 32 * 1024 * 1024,
};

/** Sum of every sample of `name` in a Prometheus text exposition (NaN when absent). */
export function metricSum(text, name) {
  let sum = NaN;
  for (const line of text.split('\n')) {
    if (!line.startsWith(name) || (line[name.length] !== ' ' && line[name.length] !== '{')) continue;
    const value = Number(line.slice(line.lastIndexOf(' ') + 1));
    if (Number.isFinite(value)) sum = (Number.isNaN(sum) ? 0 : sum) + value;
  }
  return sum;
}

/** Bytes under `dir` as du counts them (allocated blocks). */
export function duBytes(dir) {
  return new Promise((resolve) => {
    execFile('du', ['-sk', dir], (error, stdout) => resolve(error ? NaN : Number(stdout.split('\t')[0]) * 1024));
  });
}

/** One sample of the child `pid`: RSS, heap used, fds, data-dir and feed-file sizes, and the work counts so far. */
export async function sample({ pid, origin, admin, dataDir, feedDir, startedAt, load, receiver }) {
  const rss = rssOf(pid);
  const fds = readdirSync(`/proc/${pid}/fd`).length;
  const answer = await request(origin, { path: '/metrics', headers: { authorization: `Bearer ${admin}` } });
  const text = answer.status === 200 ? answer.text : '';
  return {
    t: (Date.now() - startedAt) / 1000,
    rss,
    heap: metricSum(text, 'forgesync_nodejs_heap_size_used_bytes'),
    fds,
    dataDir: await duBytes(dataDir),
    feedFiles: await duBytes(feedDir),
    syncs: metricSum(text, 'forgesync_syncs_total'),
    webhooks: metricSum(text, 'forgesync_webhooks_total'),
    delivered: metricSum(text, 'forgesync_feed_delivered_total'),
    received: (await receiver.count()).events,
    refreshes: metricSum(text, 'forgesync_import_refreshes_total'),
    ...load.counts,
  };
}

/** Least squares of ys over xs: slope and intercept. */
export function fitLine(xs, ys) {
  const n = xs.length;
  const mx = xs.reduce((a, b) => a + b, 0) / n;
  const my = ys.reduce((a, b) => a + b, 0) / n;
  let sxy = 0;
  let sxx = 0;
  for (let i = 0; i < n; i++) {
    sxy += (xs[i] - mx) * (ys[i] - my);
    sxx += (xs[i] - mx) ** 2;
  }
  const slope = sxx === 0 ? 0 : sxy / sxx;
  return { slope, intercept: my - slope * mx };
}

const fmtMib = (bytes) => `${mib(bytes).toFixed(1)} MiB`;
const signedMib = (bytes) => `${bytes >= 0 ? '+' : ''}${mib(bytes).toFixed(1)} MiB`;

/**
 * The verdict over the samples taken at or after `warmupS`: per series its
 * slope per hour, its change over the measured part, the goal and whether
 * it is met. Rows for util.table and the same as objects for the results.
 */
export function verdict(samples, warmupS) {
  const measured = samples.filter((s) => s.t >= warmupS);
  if (measured.length < 3) return { measured: measured.length, rows: [], results: [], met: false, reason: `only ${measured.length} samples after the warm-up (need 3): run longer` };
  const first = measured[0];
  const last = measured.at(-1);
  const hours = measured.map((s) => s.t / 3600);
  const series = (key) => {
    const ys = measured.map((s) => s[key]);
    return { slopePerHour: fitLine(hours, ys).slope, change: last[key] - first[key], min: Math.min(...ys), max: Math.max(...ys) };
  };
  const rss = series('rss');
  const heap = series('heap');
  const fds = series('fds');
  const data = series('dataDir');
  const retainedChanges = last.pushes - first.pushes + (last.importChanges - first.importChanges);
  const dataBound = GOALS.dataSlackBytes + GOALS.dataBytesPerChange * retainedChanges;
  const results = [
    { series: 'RSS', slope: `${signedMib(rss.slopePerHour)}/h`, change: signedMib(rss.change), goal: `slope ≤ ${GOALS.rssMibPerHour} MiB/h`, met: mib(rss.slopePerHour) <= GOALS.rssMibPerHour },
    { series: 'heap used', slope: `${signedMib(heap.slopePerHour)}/h`, change: signedMib(heap.change), goal: `slope ≤ ${GOALS.heapMibPerHour} MiB/h`, met: mib(heap.slopePerHour) <= GOALS.heapMibPerHour },
    { series: 'open fds', slope: `${fds.slopePerHour >= 0 ? '+' : ''}${fds.slopePerHour.toFixed(1)}/h`, change: `${fds.change >= 0 ? '+' : ''}${fds.change} (${fds.min}–${fds.max})`, goal: `max − min ≤ ${GOALS.fdSpread}`, met: fds.max - fds.min <= GOALS.fdSpread },
    {
      series: 'data dir',
      slope: `${signedMib(data.slopePerHour)}/h`,
      change: signedMib(data.change),
      goal: `change ≤ ${fmtMib(dataBound)} (${retainedChanges} changes × ${GOALS.dataBytesPerChange / 1024} KiB + ${fmtMib(GOALS.dataSlackBytes)})`,
      met: data.change <= dataBound,
    },
  ];
  return {
    measured: measured.length,
    results,
    rows: results.map((r) => [r.series, r.slope, r.change, r.goal, r.met ? 'met' : 'MISSED']),
    met: results.every((r) => r.met),
  };
}

/** A table row of a sample (time, memory, fds, sizes, work counts). */
export function sampleRow(s) {
  const mm = `${Math.floor(s.t / 60)}:${String(Math.round(s.t % 60)).padStart(2, '0')}`;
  return [mm, mib(s.rss).toFixed(1), mib(s.heap).toFixed(1), s.fds, mib(s.dataDir).toFixed(1), mib(s.feedFiles).toFixed(2), s.syncs, s.pushes, s.webhooks, `${s.delivered}/${s.received}`, `${s.importChanges}/${s.refreshes}`, `${s.clones}+${s.fetches}`, s.snapshots, s.reads, s.failures];
}

export const SAMPLE_HEADER = ['time', 'RSS MiB', 'heap MiB', 'fds', 'data MiB', 'feed files MiB', 'syncs', 'pushes', 'webhooks', 'events fed (2 feeds)/http got', 'import chg/refresh', 'clones+fetches', 'snapshots', 'reads', 'failures'];
