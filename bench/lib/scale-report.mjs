// The tables of bench/scale.mjs's process measurements (throughput,
// SIGKILL failover, webhook intake), printed from the results object.
import { log, table } from './util.mjs';
import { percentile } from './webhooks-load.mjs';

const int = (n) => (Number.isFinite(n) ? Math.round(n).toLocaleString('en-US') : '-');
const fixed = (n, digits = 1) => (Number.isFinite(n) ? n.toFixed(digits) : '-');
export const mark = (met) => (met ? '✓' : '✗');

/** Sync throughput per worker count, ratios against the 1-worker row (or the first measured). */
export function printThroughput(throughput, { sources, capacity, cpus, tickMs }) {
  const base = throughput.find((t) => t.workers === 1) ?? throughput[0];
  log('');
  log(
    table(
      ['sync throughput, workers on one shard', 'no-op syncs/s', 'vs 1', 'changed syncs/s', 'vs 1', 'worker CPU ms/sync (no-op / changed)', 'machine busy (no-op / changed)', 'sync --all syncs/s'],
      throughput.map((t) => [
        `${t.workers} worker process${t.workers > 1 ? 'es' : ''} (${t.workers * capacity} syncs at once)`,
        fixed(t.noop.syncsPerSec),
        `${fixed(t.noop.syncsPerSec / base.noop.syncsPerSec, 2)}×`,
        fixed(t.changed.syncsPerSec),
        `${fixed(t.changed.syncsPerSec / base.changed.syncsPerSec, 2)}×`,
        `${fixed(t.noop.workerCpuMsPerSync, 2)} / ${fixed(t.changed.workerCpuMsPerSync, 2)}`,
        `${fixed(t.noop.machineBusyPct, 0)} % / ${fixed(t.changed.machineBusyPct, 0)} %`,
        t.syncAll ? fixed(t.syncAll.syncsPerSec) : '-',
      ]),
    ),
  );
  log(`  (${sources} sources per round, each requested once; median of the rounds; vs 1 = ÷ the ${base.workers}-worker figure of this run)`);
  const all = throughput.find((t) => t.syncAll);
  if (all) {
    log(
      `  (sync --all: requestSyncMany('all'), then the scheduler nudges up to 2 × the workers' capacity less what runs and waits a pass, the next pass` +
        ` 100 ms after one that used all its room (${tickMs} ms after one that did not); timed for the first ${fixed(all.syncAll.ms / 1000)} s, no-op)`,
    );
  }
  log(`  (${cpus} CPUs: every worker, its git processes, PostgreSQL, Redis and this process share them, so more workers than CPUs cannot scale linearly)`);
}

/** SIGKILL-to-synced-by-others times over every killed sync. */
export function printKill(kill, { leaseTtlMs, schedulerTickMs, workers }) {
  const all = kill.recoveredMs;
  const bound = 2 * leaseTtlMs + schedulerTickMs;
  log('');
  log(
    table(
      ['SIGKILL of a worker mid-burst', 'kills', 'syncs in flight', 'then failed', 'p50 ms', 'max ms', '2 × lease ttl + tick, ms'],
      [
        [
          `${workers} workers on one shard, lease ttl ${leaseTtlMs} ms`,
          kill.rounds.length,
          kill.rounds.map((r) => r.inFlight).join(' + '),
          kill.rounds.reduce((n, r) => n + r.failedAfterKill.length, 0),
          int(percentile(all, 50)),
          int(all.at(-1)),
          int(bound),
        ],
      ],
    ),
  );
  for (const [i, r] of kill.rounds.entries()) {
    log(
      `  kill ${i + 1}: pid ${r.victimPid} and ${r.gitProcessesKilled} git processes, ${r.leasesHeld} sync leases held, ${r.inFlight} of them unserved (in flight) (${r.startedRowsWithItsFence} rows started under its fence); synced by others after ${r.recoveredMs.map((ms) => Math.round(ms)).join(', ')} ms; attempts since the kill ${JSON.stringify(r.attemptsAfterKill)};` +
        ` the shard row then named ${r.shardRegisteredBy.node} (${r.shardRegisteredBy.killed ? 'the killed worker' : r.shardRegisteredBy.alive ? 'alive' : 'a process that is gone'})`);
  }
  for (const [i, r] of kill.rounds.entries()) {
    for (const f of r.failedAfterKill) log(`  kill ${i + 1}: ${f.name} FAILED ${f.afterMs} ms after the kill: ${f.error}`);
  }
  log(
    `  (from SIGKILL until the registry's completed_seq reached the requested_seq of the kill for every source whose sync lease it held;` +
      ` its leases lapse within a ttl, its BullMQ jobs stall after a lock of one ttl, and a row left started is swept 2 × ttl after it started, at the scheduler's next ${schedulerTickMs} ms tick; the sync that serves it comes on top)`,
  );
}

/** Webhook intake of the lone api process against hello-world; returns whether the goal was met. */
export function printIntake(intake, goal) {
  const { hello, alone, withWorker, levels } = intake;
  const cpu = (run) => run.elsewhereCpuMsPerDelivery;
  const runs = (rates) => rates.map(int).join(' / ');
  const row = (label, run, ceiling, rates) => [
    label,
    int(run.sent),
    int(run.acceptedPerSec),
    rates ? runs(rates) : '-',
    `${fixed(run.acceptedPerSec / ceiling.acceptedPerSec, 2)}×`,
    fixed(run.p50Ms, 2),
    fixed(run.p99Ms, 2),
    fixed(run.serverCpuMsPerDelivery, 3),
    cpu(run) ? `${fixed(cpu(run).postgres, 3)} / ${fixed(cpu(run).redis, 3)} / ${fixed(cpu(run).workers, 3)}` : '-',
  ];
  const rows = [];
  for (const level of levels) {
    rows.push(row(`bare Fastify hello-world, ${level.concurrency} connections`, level.hello, level.hello, level.helloRuns));
    rows.push(row(`forgesync serve --role api, no worker running, ${level.concurrency} connections`, level.alone, level.hello, level.aloneRuns));
  }
  rows.push(row(`forgesync serve --role api, 1 worker syncing, ${withWorker.concurrency} connections`, withWorker, hello));
  log('');
  log(table(['webhook intake, unthrottled', 'sent', 'accepted/s (median)', 'runs', 'vs hello', 'p50 ms', 'p99 ms', 'server CPU ms/delivery', 'PostgreSQL / Redis / worker CPU ms/delivery'], rows));
  for (const run of [...levels.map((level) => level.alone), withWorker]) if (run.accepted !== run.sent) log(`  note: ${run.accepted}/${run.sent} accepted, statuses ${JSON.stringify(run.statuses)}`);
  log(
    '  (CPU from /proc: each delivery is one committed UPDATE in PostgreSQL and a BullMQ add in Redis, on the same CPUs as the api;' +
      ' the worker figure is its node process, its git processes not counted; vs hello: ÷ hello at the same connections, the worker row ÷ hello at its best)',
  );
  log(`  (unthrottled rate, each server's median run at its best level: hello ${int(hello.acceptedPerSec)}/s at ${hello.concurrency} connections, api ${int(alone.acceptedPerSec)}/s at ${alone.concurrency}: ${fixed(intake.ratio, 2)}×)`);
  log(`  (the worker served the requests ${fixed(alone.catchUpMs / 1000)} s / ${fixed(withWorker.catchUpMs / 1000)} s after the last delivery)`);
  return intake.ratio >= goal;
}
