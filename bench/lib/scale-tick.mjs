// The scheduler-tick measurement of bench/scale.mjs: claimDue of the due rows
// on a big and a small registry (PostgreSQL schema or SQLite file), filled
// by multi-row INSERTs. See the method in bench/scale.mjs's header.
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { sql } from 'kysely';
import pg from 'pg';
import { openDatabase } from '../../dist/store/database.js';
import { RegistryRepository } from '../../dist/replication/store/registry.js';
import { collectGarbage, median, spreadPct } from './harness.mjs';
import { progress } from './util.mjs';

const CLAIM_MS = 30_000;
const HOUR = 3_600_000;

/**
 * Fills an empty registry with `count` sources, `due` of them pending, the
 * rest synced and due in an hour; of those, `due` were verified two hours ago
 * (due for re-verification at a 1 h interval), the others just now.
 */
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
          const verifyDue = !pending && from + k < 2 * due;
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
            verified_at: pending ? null : verifyDue ? now - 2 * HOUR : now,
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
async function openFleet(kind, count, cfg, root, cleanups) {
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
  return { count, database, registry: new RegistryRepository(database), samples: [], verifySamples: [] };
}

/** One timed tick: claimDue of the due rows; then (untimed) they are made due again. */
async function tick(fleet, cfg) {
  collectGarbage();
  const t0 = performance.now();
  const claimed = await fleet.registry.claimDue(new Date(), { limit: cfg.due, claimMs: CLAIM_MS });
  const ms = performance.now() - t0;
  if (claimed.length !== cfg.due) throw new Error(`a tick of the ${fleet.count}-source fleet claimed ${claimed.length} rows, expected ${cfg.due}`);
  await fleet.database.db.updateTable('registry').set({ next_run_at: 0 }).where('state', '=', 'pending').execute();
  return ms;
}

/** One timed verification pick: the mirrors due for re-verification (what a pass gives its spare room), which must be the `due` verified two hours ago. */
async function verifyPick(fleet, cfg) {
  collectGarbage();
  const t0 = performance.now();
  const picked = await fleet.registry.dueForVerification(new Date(), { intervalMs: HOUR, limit: cfg.due });
  const ms = performance.now() - t0;
  if (picked.length !== cfg.due) throw new Error(`a verification pick of the ${fleet.count}-source fleet found ${picked.length} rows, expected ${cfg.due}`);
  return ms;
}

/** Times ticks on a big and a small fleet of `kind` ('postgres' | 'sqlite'); see bench/scale.mjs's header. */
export async function measureTicks(kind, cfg, root) {
  const cleanups = [];
  try {
    return await measureTicksOn(kind, cfg, root, cleanups);
  } finally {
    for (const cleanup of cleanups) await cleanup().catch(() => undefined);
  }
}

async function measureTicksOn(kind, cfg, root, cleanups) {
  const fleets = [await openFleet(kind, cfg.big, cfg, root, cleanups), await openFleet(kind, cfg.small, cfg, root, cleanups)];
  try {
    for (let rep = -2; rep < cfg.reps; rep++) {
      for (const fleet of rep % 2 ? [...fleets].reverse() : fleets) {
        const ms = await tick(fleet, cfg);
        const verifyMs = await verifyPick(fleet, cfg);
        if (rep >= 0) {
          fleet.samples.push(ms);
          fleet.verifySamples.push(verifyMs);
        }
      }
    }
    const [big, small] = fleets;
    const bigMs = median(big.samples);
    const smallMs = median(small.samples);
    const verify = { bigMs: median(big.verifySamples), smallMs: median(small.verifySamples) };
    return {
      kind,
      bigMs,
      smallMs,
      ratio: bigMs / smallMs,
      spread: { big: spreadPct(big.samples), small: spreadPct(small.samples) },
      samples: { big: big.samples, small: small.samples },
      verify: { ...verify, ratio: verify.bigMs / verify.smallMs },
    };
  } finally {
    for (const fleet of fleets) await fleet.database.close();
  }
}
