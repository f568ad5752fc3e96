import type { KyselyPlugin } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openDatabase, type Database } from '../../src/store/database.js';
import { recordFailures, readFailures } from '../../src/activity/store/failures.js';
import { addToRollup, foldMinutes, pruneHours, readMinutesByHour, readRollup, toHours, type RollupValues } from '../../src/activity/store/rollup.js';
import { activityDb, type ActivityDb } from '../../src/activity/store/tables.js';
import { createTestDatabase, type TestDatabase } from '../support/harness.js';

/*
 * The activity rollup's statements on both registry dialects (the registry
 * database is SQLite or PostgreSQL; MySQL is a lease backend only). Two
 * connections stand for two processes of a cluster.
 */

const MINUTE = 60_000;
const HOUR = 3_600_000;
/** An hour boundary, so that minute and hour buckets are easy to read. */
const T0 = Date.UTC(2026, 0, 5, 10);

const syncs = (result: string, total: number): RollupValues => ({ metric: 'forgesync_syncs_total', labels: JSON.stringify({ result }), total, peak: 0, samples: 0 });
const lag = (value: number): RollupValues => ({ metric: 'forgesync_feed_lag_changes', labels: '{}', total: value, peak: value, samples: 1 });

/** A plugin that notes the kind of every INSERT, UPDATE and DELETE its Kysely runs, in `writes`. */
function writesTo(writes: string[]): KyselyPlugin {
  return {
    transformQuery({ node }) {
      if (node.kind === 'InsertQueryNode' || node.kind === 'UpdateQueryNode' || node.kind === 'DeleteQueryNode') writes.push(node.kind);
      return node;
    },
    transformResult: async ({ result }) => result,
  };
}

describe.each(['sqlite', 'postgres'] as const)('activity rollup on %s', (kind) => {
  let target: TestDatabase;
  let first: Database;
  let second: Database;
  let db: ActivityDb;
  let other: ActivityDb;

  beforeAll(async () => {
    target = await createTestDatabase(kind);
    first = await openDatabase(target.url);
    second = await openDatabase(target.url);
    db = activityDb(first);
    other = activityDb(second);
  });
  afterAll(async () => {
    await first?.close();
    await second?.close();
    await target?.drop();
  });

  it('adds what several processes sampled into the same minute rows: totals and samples sum, the peak is the highest', async () => {
    await Promise.all([
      addToRollup(db, kind, 'minute', T0, [syncs('synced', 3), syncs('failed', 1), lag(5)]),
      addToRollup(other, kind, 'minute', T0, [syncs('synced', 2), lag(9)]),
    ]);
    await addToRollup(db, kind, 'minute', T0, [syncs('synced', 0.5), lag(1)]);
    await addToRollup(db, kind, 'minute', T0 + MINUTE, [syncs('synced', 7)]);
    const rows = await readRollup(db, 'minute', T0);
    expect(rows.map(({ bucketAt, metric, labels, total, peak, samples }) => ({ at: bucketAt - T0, metric, labels, total, peak, samples }))).toEqual([
      { at: 0, metric: 'forgesync_feed_lag_changes', labels: '{}', total: 15, peak: 9, samples: 3 },
      { at: 0, metric: 'forgesync_syncs_total', labels: '{"result":"failed"}', total: 1, peak: 0, samples: 0 },
      { at: 0, metric: 'forgesync_syncs_total', labels: '{"result":"synced"}', total: 5.5, peak: 0, samples: 0 },
      { at: MINUTE, metric: 'forgesync_syncs_total', labels: '{"result":"synced"}', total: 7, peak: 0, samples: 0 },
    ]);
    expect(await readRollup(db, 'minute', T0 + MINUTE)).toHaveLength(1);
  });

  it('folds minute rows before a cutoff into hour rows once, even when two processes fold at the same time', async () => {
    await addToRollup(db, kind, 'minute', T0 + 59 * MINUTE, [syncs('synced', 1), lag(20)]);
    await addToRollup(db, kind, 'minute', T0 + HOUR, [syncs('synced', 100)]);
    // Two processes at once on PostgreSQL. Two SQLite connections of one process cannot: the
    // second's wait for the lock blocks the event loop the first needs to commit (processes don't share one).
    const fold = (on: ActivityDb) => foldMinutes(on, kind, T0 + HOUR);
    const folded = kind === 'postgres' ? await Promise.all([fold(db), fold(other)]) : [await fold(db), await fold(other)];
    // Six minute rows of the first hour: each folded by exactly one of the two.
    expect(folded.reduce((sum, count) => sum + count, 0)).toBe(6);
    expect((await readRollup(db, 'minute', 0)).map((row) => row.bucketAt)).toEqual([T0 + HOUR]);
    const hours = await readRollup(db, 'hour', 0);
    expect(hours.map(({ bucketAt, labels, total, peak, samples }) => ({ at: bucketAt - T0, labels, total, peak, samples }))).toEqual([
      { at: 0, labels: '{}', total: 35, peak: 20, samples: 4 },
      { at: 0, labels: '{"result":"failed"}', total: 1, peak: 0, samples: 0 },
      { at: 0, labels: '{"result":"synced"}', total: 13.5, peak: 0, samples: 0 },
    ]);
    // A later fold of the same hour's stragglers adds to its hour rows.
    await addToRollup(db, kind, 'minute', T0 + 30 * MINUTE, [syncs('synced', 2)]);
    expect(await foldMinutes(other, kind, T0 + HOUR)).toBe(1);
    expect((await readRollup(db, 'hour', 0)).find((row) => row.labels === '{"result":"synced"}')?.total).toBe(15.5);
  });

  it('prunes hour rows before a cutoff and keeps the others', async () => {
    await addToRollup(db, kind, 'hour', T0 - 40 * 24 * HOUR, [syncs('synced', 4)]);
    expect((await readRollup(db, 'hour', 0)).length).toBe(4);
    expect(await pruneHours(db, T0 - 31 * 24 * HOUR)).toBe(1);
    expect((await readRollup(db, 'hour', 0)).map((row) => row.bucketAt)).toEqual([T0, T0, T0]);
  });

  it('records failing subjects: first seen stays while the group stays, restarts when it changes, and recovered ones go', async () => {
    await recordFailures(db, 'source', [
      { subject: '1', groupId: 'a', lastSeenAt: 1000 },
      { subject: '2', groupId: 'a', lastSeenAt: 1500 },
    ]);
    await recordFailures(other, 'source', [
      { subject: '1', groupId: 'a', lastSeenAt: 2000 },
      { subject: '2', groupId: 'b', lastSeenAt: 2500 },
      { subject: '3', groupId: 'b', lastSeenAt: 3000 },
    ]);
    const byFirst = (await readFailures(db, 'source')).sort((x, y) => x.subject.localeCompare(y.subject));
    expect(byFirst).toEqual([
      { subject: '1', groupId: 'a', firstSeenAt: 1000 },
      { subject: '2', groupId: 'b', firstSeenAt: 2500 },
      { subject: '3', groupId: 'b', firstSeenAt: 3000 },
    ]);
    await recordFailures(db, 'source', [{ subject: '3', groupId: 'b', lastSeenAt: 4000 }]);
    expect(await readFailures(db, 'source')).toEqual([{ subject: '3', groupId: 'b', firstSeenAt: 3000 }]);
    await recordFailures(db, 'source', []);
    expect(await readFailures(db, 'source')).toEqual([]);
  });

  it('records the same failing subjects again without a write, and writes only the subject whose group changed', async () => {
    const failing = [
      { subject: '7', groupId: 'a', lastSeenAt: 1000 },
      { subject: '8', groupId: 'a', lastSeenAt: 1000 },
    ];
    await recordFailures(db, 'source', failing);
    const writes: string[] = [];
    const watched = db.withPlugin(writesTo(writes));
    // Every sample records the failing sources: later failures in the same groups change nothing stored.
    await recordFailures(watched, 'source', failing.map((failure) => ({ ...failure, lastSeenAt: 5000 })));
    expect(writes).toEqual([]);
    await recordFailures(watched, 'source', [failing[0]!, { subject: '8', groupId: 'b', lastSeenAt: 6000 }]);
    expect(writes).toEqual(['InsertQueryNode']);
    expect((await readFailures(db, 'source')).sort((x, y) => x.subject.localeCompare(y.subject))).toEqual([
      { subject: '7', groupId: 'a', firstSeenAt: 1000 },
      { subject: '8', groupId: 'b', firstSeenAt: 6000 },
    ]);
    await recordFailures(db, 'source', []);
  });

  it('reads minute rows summed into their hours from a start on, as an hour row of them would be', async () => {
    await addToRollup(db, kind, 'minute', T0 + 2 * HOUR + MINUTE, [syncs('synced', 2), lag(4)]);
    await addToRollup(other, kind, 'minute', T0 + 2 * HOUR + 59 * MINUTE, [syncs('synced', 3.5), lag(10)]);
    await addToRollup(db, kind, 'minute', T0 + 2 * HOUR + 59 * MINUTE, [lag(1)]);
    await addToRollup(db, kind, 'minute', T0 + 3 * HOUR + 30 * MINUTE, [syncs('synced', 1)]);
    const hours = await readMinutesByHour(db, T0 + 2 * HOUR);
    expect(hours.map(({ resolution, bucketAt, metric, labels, total, peak, samples }) => ({ resolution, at: bucketAt - T0, metric, labels, total, peak, samples }))).toEqual([
      { resolution: 'hour', at: 2 * HOUR, metric: 'forgesync_feed_lag_changes', labels: '{}', total: 15, peak: 10, samples: 3 },
      { resolution: 'hour', at: 2 * HOUR, metric: 'forgesync_syncs_total', labels: '{"result":"synced"}', total: 5.5, peak: 0, samples: 0 },
      { resolution: 'hour', at: 3 * HOUR, metric: 'forgesync_syncs_total', labels: '{"result":"synced"}', total: 1, peak: 0, samples: 0 },
    ]);
    // The same as summing the minute rows in JS; the minute left at T0 + HOUR is before the start.
    expect(hours).toEqual(toHours(await readRollup(db, 'minute', T0 + 2 * HOUR)));
    expect((await readMinutesByHour(db, T0 + HOUR)).map((row) => row.bucketAt - T0)).toEqual([HOUR, 2 * HOUR, 2 * HOUR, 3 * HOUR]);
  });
});
