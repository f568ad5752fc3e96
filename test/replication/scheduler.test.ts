// The scheduler's pace, over a real SQLite registry and lease store: passes a full tick apart
// would cap scheduled syncs at room/tick, so a pass that used all its room is followed soon,
// and one that had no room backs off to the tick instead of spinning.
import { setTimeout as sleep } from 'node:timers/promises';
import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { openLeaseManager } from '../../src/leases/open.js';
import type { LeaseManager } from '../../src/leases/manager.js';
import { Scheduler } from '../../src/replication/scheduler.js';
import type { Database } from '../../src/store/database.js';
import { RegistryRepository } from '../../src/replication/store/registry.js';
import { SourceRepository } from '../../src/replication/store/sources.js';
import { sqliteBackend as leaseBackend } from '../leases/backends.js';
import { sqliteBackend, type StoreTarget } from '../store/backends.js';
import { eventually } from '../support/eventually.js';

/** Long enough that any pass beyond the first one within a test's few seconds is a short one. */
const TICK_MS = 10_000;

let target: StoreTarget | undefined;
let database: Database | undefined;
let leases: LeaseManager | undefined;
let scheduler: Scheduler | undefined;

afterEach(async () => {
  await scheduler?.stop();
  await leases?.close();
  await database?.close();
  await target?.dispose();
  scheduler = leases = database = target = undefined;
});

/**
 * A scheduler over `due` new (pending) sources whose workers have `room(pass)`
 * free slots at each pass; it records the passes (syncRoom is asked once a pass)
 * and the sources nudged.
 */
async function setup(due: number, room: (pass: number) => number) {
  target = await sqliteBackend.fresh();
  database = await target.open();
  const sources = new SourceRepository(database);
  for (let i = 0; i < due; i++) await sources.create({ name: `s${i}`, url: `https://git.example.com/s${i}.git` });
  leases = await openLeaseManager(leaseBackend().url);
  const passes: number[] = [];
  const nudged: string[] = [];
  const started = Date.now();
  scheduler = new Scheduler({
    registry: new RegistryRepository(database),
    leases,
    syncRoom: async () => room(passes.push(Date.now() - started) - 1),
    nudge: async (source) => void nudged.push(source.name),
    nudgeVerify: async () => undefined,
    logger: pino({ level: 'silent' }),
    tickMs: TICK_MS,
    claimMs: 60_000,
    leaseTtlMs: 5_000,
    verifyIntervalMs: 24 * 3_600_000,
  });
  scheduler.start();
  return { passes, nudged, started };
}

describe('Scheduler pace', () => {
  it('follows a pass that used all its room soon, so a backlog drains at the workers\' pace, not one room a tick', async () => {
    const { passes, nudged, started } = await setup(50, () => 5);
    // 10 passes of 5: about a second at short pauses, 100 s at one pass a tick.
    await eventually('all 50 sources nudged', () => nudged.length === 50, 5_000, 20);
    expect(Date.now() - started).toBeLessThan(5_000);
    expect(new Set(nudged).size).toBe(50);
    // The pass after the last full one finds nothing due (less than its room): the full tick follows.
    await eventually('the pass that finds the backlog drained', () => passes.length === 11, 1_000, 20);
    await sleep(1_000);
    expect(passes).toHaveLength(11);
    expect(nudged).toHaveLength(50);
  });

  it('does not spin when the workers have no room: one pass a tick from the start', async () => {
    const { passes, nudged } = await setup(50, () => 0);
    await eventually('the first pass', () => passes.length === 1, 2_000, 20);
    await sleep(1_500);
    expect(passes).toHaveLength(1);
    expect(nudged).toEqual([]);
  });

  it('backs off when the room runs out in a backlog, doubling the pause up to the tick', async () => {
    // Room for one pass, then none: the pauses after it grow 200, 400, 800, 1600 ms…
    const { passes, nudged } = await setup(50, (pass) => (pass === 0 ? 5 : 0));
    await eventually('the first pass', () => passes.length >= 1, 2_000, 20);
    await sleep(2_000);
    expect(nudged).toHaveLength(5);
    // Spinning at the short pause would be ~20 passes by now; the doubling gives 5 or so (0, 100, 300, 700, 1500 ms).
    expect(passes.length).toBeGreaterThanOrEqual(3);
    expect(passes.length).toBeLessThanOrEqual(7);
    // The last pause is the longest (sleeps, not the passes' own time, set the gaps).
    const gaps = passes.slice(1).map((at, i) => at - passes[i]!);
    expect(gaps[gaps.length - 1]).toBe(Math.max(...gaps));
  });
});
