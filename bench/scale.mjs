#!/usr/bin/env node
// Distributed mode at scale. Measured so far: the scheduler's tick against
// the fleet's size on PostgreSQL (and SQLite, for reference).
//
//   npm run bench:scale               build, then: node --expose-gc bench/scale.mjs
//   BENCH_QUICK=1                     10,000 vs 1,000 sources, 100 due, 5 repetitions (smoke test)
//   BENCH_SCALE_BIG=100000            sources of the big fleet
//   BENCH_SCALE_SMALL=10000           sources of the small fleet
//   BENCH_SCALE_DUE=1000              rows due at each tick
//   BENCH_SCALE_REPS=15               timed ticks per fleet (after 2 warm-ups; median shown)
//   BENCH_POSTGRES_URL=postgres://postgres@127.0.0.1:5432/test
//   BENCH_SCALE_SQLITE=0              leave SQLite out
//   BENCH_STRICT=1                    exit 1 when a goal is missed
//
// Method (scheduler tick):
//  - Each fleet is a registry of its own (PostgreSQL: a fresh schema, migrated
//    by openDatabase; SQLite: a file in a temp directory), filled by multi-row
//    INSERTs: N sources, every registry row synced with its next run an hour
//    ahead, except DUE rows pending (next_run_at 0). ANALYZE afterwards.
//  - A tick is what the scheduler asks the registry for in a pass:
//    RegistryRepository.claimDue(now, { limit: DUE, claimMs }) — pick the due
//    rows by next_run_at's index (FOR UPDATE SKIP LOCKED), move them a claim
//    ahead, read them with their sources — and it must return DUE rows.
//    Between ticks (untimed) the claimed rows are made due again.
//  - The fleets alternate, the order swapping per repetition; ratio =
//    median(big) / median(small). Goal on PostgreSQL: ≤ 1.5×.
//  - Not measured yet (later parts of distributed mode): sync throughput with
//    1, 2 and 4 worker processes, the time from a worker's SIGKILL to its
//    sources synced by others, webhook intake on a lone api process.
// Results also go to bench/results/scale.json.

import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { sql } from 'kysely';
import pg from 'pg';
import { openDatabase } from '../dist/store/database.js';
import { RegistryRepository } from '../dist/store/registry.js';
import { collectGarbage, median, spreadPct } from './lib/harness.mjs';
import { describeError, intSetting, log, progress, quick, table, writeResults } from './lib/util.mjs';

const env = process.env;
const cfg = {
  quick,
  big: intSetting('BENCH_SCALE_BIG', quick ? 10_000 : 100_000, 1),
  small: intSetting('BENCH_SCALE_SMALL', quick ? 1_000 : 10_000, 1),
  due: intSetting('BENCH_SCALE_DUE', quick ? 100 : 1000, 1),
  reps: intSetting('BENCH_SCALE_REPS', quick ? 5 : 15, 1),
  postgresUrl: env.BENCH_POSTGRES_URL || 'postgres://postgres@127.0.0.1:5432/test',
  sqlite: env.BENCH_SCALE_SQLITE !== '0',
  strict: env.BENCH_STRICT === '1',
};
const GOALS = { tickRatio: 1.5 };
const CLAIM_MS = 30_000;
const HOUR = 3_600_000;

const root = mkdtempSync(join(os.tmpdir(), 'forgesync-bench-scale-'));
const cleanups = [];
process.once('exit', () => rmSync(root, { recursive: true, force: true }));

/** Fills an empty registry with `count` sources, `due` of them pending, the rest synced and due in an hour. */
async function fill(db, count, due, label) {
  const now = Date.now();
  const CHUNK = 1000;
  for (let from = 0; from < count; from += CHUNK) {
    const rows = [];
    for (let i = from; i < Math.min(count, from + CHUNK); i++) {
      rows.push({ name: `repo-${String(i).padStart(7, '0')}`, url: `https://git.example.com/org/repo-${i}.git`, match_key: `git.example.com/org/repo-${i}`, enabled: 1, created_at: now, updated_at: now, shard_id: `s${i % 3}` });
    }
    const ids = await db.insertInto('sources').values(rows).returning('id').execute();
    await db
      .insertInto('registry')
      .values(
        ids.map(({ id }, k) => {
          const pending = from + k < due;
          return {
            source_id: Number(id),
            state: pending ? 'pending' : 'synced',
            retry_count: 0,
            verification_state: 'verified',
            missing_on_primary: 0,
            requested_seq: 1,
            completed_seq: pending ? 0 : 1,
            target_seq: pending ? 0 : 1,
            last_synced_at: pending ? null : now,
            next_run_at: pending ? 0 : now + HOUR,
            updated_at: now,
          };
        }),
      )
      .execute();
    progress(`${label}: ${Math.min(count, from + CHUNK).toLocaleString('en-US')} / ${count.toLocaleString('en-US')} sources`);
  }
  progress('');
}

/** A fleet of `count` sources on `kind`, filled; returns { database, registry, close }. */
async function openFleet(kind, count) {
  let database;
  if (kind === 'postgres') {
    const schema = `bench_scale_${randomBytes(5).toString('hex')}`;
    database = await openDatabase(cfg.postgresUrl, { schema });
    cleanups.push(async () => {
      const admin = new pg.Client({ connectionString: cfg.postgresUrl });
      await admin.connect();
      await admin.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
      await admin.end();
    });
  } else {
    database = await openDatabase(`sqlite:${join(root, `fleet-${count}`, 'forgesync.db')}`);
  }
  await fill(database.db, count, cfg.due, `${kind} fleet of ${count.toLocaleString('en-US')}`);
  await sql`analyze`.execute(database.db);
  return { count, database, registry: new RegistryRepository(database), samples: [] };
}

/** One timed tick: claimDue of the due rows; then (untimed) they are made due again. */
async function tick(fleet) {
  collectGarbage();
  const t0 = performance.now();
  const claimed = await fleet.registry.claimDue(new Date(), { limit: cfg.due, claimMs: CLAIM_MS });
  const ms = performance.now() - t0;
  if (claimed.length !== cfg.due) throw new Error(`a tick of the ${fleet.count}-source fleet claimed ${claimed.length} rows, expected ${cfg.due}`);
  await fleet.database.db.updateTable('registry').set({ next_run_at: 0 }).where('state', '=', 'pending').execute();
  return ms;
}

async function measureTicks(kind) {
  const fleets = [await openFleet(kind, cfg.big), await openFleet(kind, cfg.small)];
  try {
    for (let rep = -2; rep < cfg.reps; rep++) {
      for (const fleet of rep % 2 ? [...fleets].reverse() : fleets) {
        const ms = await tick(fleet);
        if (rep >= 0) fleet.samples.push(ms);
      }
    }
    const [big, small] = fleets;
    const bigMs = median(big.samples);
    const smallMs = median(small.samples);
    return { kind, bigMs, smallMs, ratio: bigMs / smallMs, spread: { big: spreadPct(big.samples), small: spreadPct(small.samples) }, samples: { big: big.samples, small: small.samples } };
  } finally {
    for (const fleet of fleets) await fleet.database.close();
  }
}

const results = {};
let failure;
log(`forgesync scale benchmark — node ${process.version}, ${os.cpus().length} CPUs; tick: ${cfg.big.toLocaleString('en-US')} vs ${cfg.small.toLocaleString('en-US')} sources, ${cfg.due} due, ${cfg.reps} repetitions`);
try {
  results.postgres = await measureTicks('postgres');
  if (cfg.sqlite) results.sqlite = await measureTicks('sqlite');
} catch (error) {
  failure = describeError(error);
  log(`run failed: ${failure}${/ECONNREFUSED|connect/.test(failure) ? ` (is PostgreSQL at ${cfg.postgresUrl} up? set BENCH_POSTGRES_URL)` : ''}`);
}
for (const cleanup of cleanups) await cleanup().catch(() => undefined);

const rows = Object.values(results).map((r) => [
  `scheduler tick (${r.kind}): ${cfg.big.toLocaleString('en-US')} vs ${cfg.small.toLocaleString('en-US')} sources, ${cfg.due} due`,
  `${r.bigMs.toFixed(2)} ms`,
  `${r.smallMs.toFixed(2)} ms`,
  `${r.ratio.toFixed(2)}×`,
  r.kind === 'postgres' ? `≤ ${GOALS.tickRatio.toFixed(2)}×` : '-',
  r.kind === 'postgres' ? (r.ratio <= GOALS.tickRatio ? 'yes' : 'NO') : '-',
]);
log('');
log(table(['measure', 'big fleet', 'small fleet', 'ratio', 'goal', 'met?'], rows));
for (const r of Object.values(results)) log(`  ${r.kind}: spread ±${Math.round(r.spread.big)}% / ±${Math.round(r.spread.small)}%; per tick big/small ms: ${r.samples.big.map((ms, i) => `${ms.toFixed(1)}/${r.samples.small[i].toFixed(1)}`).join(', ')}`);
log('  not measured yet: sync throughput with 1, 2 and 4 workers, SIGKILL-to-resync time, webhook intake on a lone api process');
const met = !failure && results.postgres?.ratio <= GOALS.tickRatio;
log(`goals: ${failure ? 'run FAILED' : met ? 'all met' : 'NOT all met'}`);
const file = writeResults('scale', { date: new Date().toISOString(), node: process.version, cpus: os.cpus().length, config: { ...cfg, goals: GOALS }, status: failure ? 'failed' : 'ran', ...(failure ? { reason: failure } : {}), results, goalsMet: met });
log(`results written to ${file}`);
if (failure) process.exitCode = 1;
else if (cfg.strict && !met) process.exitCode = 1;
