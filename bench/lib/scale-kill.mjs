// Failover of bench/scale.mjs: SIGKILL a worker while it has syncs in flight
// and time until every source it held is synced by another process. See the
// method in bench/scale.mjs's header.
import { readdirSync, readFileSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { addCommit, pool } from './git-fleet.mjs';
import { requestAll, SHARD } from './scale-cluster.mjs';
import { progress } from './util.mjs';

/** Every process below `pid` (its git processes and theirs), from /proc's parent pids. */
function descendants(pid) {
  const children = new Map();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      children.set(ppid, [...(children.get(ppid) ?? []), Number(entry)]);
    } catch {
      // gone meanwhile
    }
  }
  const found = [];
  for (let queue = [pid]; queue.length > 0; ) {
    const next = children.get(queue.shift()) ?? [];
    found.push(...next);
    queue.push(...next);
  }
  return found;
}

/**
 * SIGKILL to the worker and to its git processes, as when its machine or
 * container dies: a git fetch orphaned by killing node alone would finish into
 * the shared shard's mirror and leave the others nothing to do.
 */
function killTree(pid) {
  const below = descendants(pid);
  process.kill(pid, 'SIGKILL');
  for (const child of below) {
    try {
      process.kill(child, 'SIGKILL');
    } catch {
      // exited meanwhile
    }
  }
  return below.length;
}

/** Whether process `pid` exists (signal 0 checks without sending anything). */
function isAlive(pid) {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

const sourceIdOf = (key) => Number(key.slice('sync:repository:'.length));

/** The sync leases `pid` holds now: the sources it has in flight (a lease outlives a SIGKILL by up to its ttl). */
async function heldBy(cluster, pid) {
  return (await cluster.syncHolders()).filter((h) => h.owner.pid === pid);
}

/** One round: a burst of changed syncs, a SIGKILL of `victim` mid-burst, the wait for its sources. */
async function round(cluster, victim, { capacity, timeoutMs, label }) {
  progress(`${label}: a commit on every upstream`);
  // Changed syncs fetch, so each is in flight longer than a no-op one: easier to catch.
  await pool(cluster.upstreams, 8, (upstream) => addCommit(upstream, `kill ${label} ${Date.now()}`));
  progress(`${label}: requesting every source`);
  await requestAll(cluster);
  // Kill when the victim runs a full set of syncs (its capacity), or has any after 2 s.
  const watchUntil = performance.now() + 2000;
  for (;;) {
    const held = await heldBy(cluster, victim.child.pid);
    if (held.length >= capacity || (held.length > 0 && performance.now() > watchUntil)) break;
    const { done, n } = await cluster.caughtUp();
    if (done === n) throw new Error(`${label}: the burst ended before the victim was seen holding a sync lease`);
    await sleep(5);
  }
  const killedAtWall = Date.now();
  const killedAt = performance.now();
  const gitKilled = killTree(victim.child.pid);
  cluster.forget(victim);
  // Read after the kill: these are exactly the syncs that died with it (no request is issued meanwhile).
  const held = await heldBy(cluster, victim.child.pid);
  const rows = await cluster.query(
    `select source_id::int as id, requested_seq::int as seq, completed_seq::int as done, state, fence::text as fence from registry where source_id = any($1)`,
    [held.map((h) => sourceIdOf(h.key))],
  );
  // A lease whose row is already served was between its last write and its release: not in flight.
  const ids = rows.filter((r) => r.done < r.seq).map((r) => r.id);
  const seqAtKill = new Map(rows.map((r) => [r.id, r.seq]));
  const startedByVictim = rows.filter((r) => ids.includes(r.id) && r.state === 'started' && held.some((h) => sourceIdOf(h.key) === r.id && String(h.fence) === r.fence)).length;
  progress(`${label}: killed pid ${victim.child.pid} with ${ids.length} syncs in flight; waiting for the others`);
  const recoveredMs = new Map();
  // A killed sync that then fails (a git lock file left in the mirror, say) is a finding, not a wait.
  const failed = new Map();
  const deadline = killedAt + timeoutMs;
  while (recoveredMs.size + failed.size < ids.length) {
    const now = performance.now();
    const current = await cluster.query(
      `select r.source_id::int as id, r.completed_seq::int as done, r.state, r.last_failure, s.name from registry r join sources s on s.id = r.source_id where r.source_id = any($1)`,
      [ids],
    );
    for (const { id, done, state, last_failure: error, name } of current) {
      if (recoveredMs.has(id) || failed.has(id)) continue;
      if (done >= seqAtKill.get(id)) recoveredMs.set(id, now - killedAt);
      else if (state === 'failed') failed.set(id, { name, afterMs: Math.round(now - killedAt), error });
    }
    if (now > deadline) throw new Error(`${label}: ${ids.length - recoveredMs.size - failed.size} of the killed worker's ${ids.length} sources not synced ${timeoutMs} ms after the kill`);
    await sleep(10);
  }
  // Who served them: attempts begun after the kill (the victim was dead by then), by result.
  const attempts = await cluster.query(
    `select result, count(*)::int as n from sync_attempts where source_id = any($1) and started_at >= $2 group by result`,
    [ids, killedAtWall],
  );
  await cluster.waitCaughtUp(120_000, 20, { ignoreFailed: true });
  // Every worker of a shard registers it with its own node and internal endpoint (last one wins);
  // recorded to show whether the shard still names a process that is gone.
  const [shard] = await cluster.query(`select node, endpoint from shards where id = $1`, [SHARD]);
  const shardPid = Number(shard?.node.split(':').at(-1));
  return {
    shardRegisteredBy: { ...shard, alive: isAlive(shardPid), killed: shardPid === victim.child.pid },
    victimPid: victim.child.pid,
    leasesHeld: held.length,
    inFlight: ids.length,
    gitProcessesKilled: gitKilled,
    startedRowsWithItsFence: startedByVictim,
    recoveredMs: [...recoveredMs.values()].sort((a, b) => a - b),
    failedAfterKill: [...failed.values()],
    attemptsAfterKill: Object.fromEntries(attempts.map((a) => [a.result ?? 'unfinished', a.n])),
  };
}

/**
 * `rounds` kills with `workers` workers running (a fresh one replaces each
 * victim before the next round). Returns { rounds, recoveredMs (all, sorted) }.
 */
export async function measureKill(cluster, { workers, rounds, capacity, timeoutMs = 90_000 }) {
  await cluster.keepWorkers(workers);
  const results = [];
  for (let r = 0; r < rounds; r++) {
    while (cluster.workers.length < workers) {
      progress(`starting a worker (${cluster.workers.length + 1}/${workers})`);
      await cluster.startWorker();
    }
    // The oldest worker: it has served the longest, so its queue position is no special case.
    results.push(await round(cluster, cluster.workers[0], { capacity, timeoutMs, label: `kill ${r + 1}/${rounds}` }));
  }
  progress('');
  return { rounds: results, recoveredMs: results.flatMap((r) => r.recoveredMs).sort((a, b) => a - b) };
}
