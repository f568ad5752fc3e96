import { setImmediate as tick, setTimeout as sleep } from 'node:timers/promises';
import BetterSqlite3 from 'better-sqlite3';
import { sql, type CompiledQuery, type Kysely } from 'kysely';
import pg from 'pg';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { changesAfter, type ChangeRow } from '../../src/feeds/store/changes.js';
import { pruneChangeLog } from '../../src/feeds/prune.js';
import { guardedList, run, runBatch, type Batch } from '../../src/store/batch.js';
import { appendChanges, headSeq, numberStagedChanges, type ChangeInput } from '../../src/store/change-log.js';
import { sqliteHandle } from '../../src/store/connect.js';
import { openDatabase, type Database } from '../../src/store/database.js';
import type { Schema } from '../../src/store/types.js';
import { createTestDatabase, type TestDatabase } from '../support/harness.js';

/** What a reader sees of a change, as a plain object. */
const plain = (row: ChangeRow) => ({
  seq: row.seq,
  type: row.type,
  module: row.module,
  scope: row.scope,
  key: row.key,
  subject: row.subject,
  data: row.data,
  ...(row.object ? { object: row.object } : {}),
  recordedAt: row.recordedAt,
});

/** Seed of the randomized writers (override with CHANGE_LOG_SEED to replay a failure). */
const SEED = Number(process.env.CHANGE_LOG_SEED ?? 20_240_607);

function change(key: string, data: unknown, extra: Partial<ChangeInput> = {}): ChangeInput {
  return { type: 'dev.forgesync.test', module: 'replication', scope: 'scope', key, subject: null, data, ...extra };
}

/** Inside a batch: the statements that append `changes`. */
function* appending(db: Kysely<Schema>, changes: readonly ChangeInput[], nowMs = 1): Batch<void> {
  for (const statement of appendChanges(db, changes, nowMs)) yield statement;
}

/** Appends `changes` in one atomic batch. */
function append(db: Kysely<Schema>, changes: readonly ChangeInput[], nowMs = 1): Promise<unknown> {
  return runBatch(db, () => appending(db, changes, nowMs));
}

/** appendChanges' statements as SQL + parameters, for a connection of the test's own. */
function compiled(db: Kysely<Schema>, changes: readonly ChangeInput[], nowMs = 1): CompiledQuery[] {
  return appendChanges(db, changes, nowMs).map(({ query, args }) => query.bind(...args).compile());
}

const seqs = (rows: readonly ChangeRow[]) => rows.map((row) => row.seq);
const range = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => from + i);

/** mulberry32: a small seeded PRNG in [0, 1). */
function random(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 2 ** 32;
  };
}

describe.each(['sqlite', 'postgres'] as const)('change log on %s', (kind) => {
  let target: TestDatabase;
  let database: Database;
  let db: Kysely<Schema>;

  beforeAll(async () => {
    target = await createTestDatabase(kind); // throws "PostgreSQL at … is not reachable; start it with …"
    database = await openDatabase(target.url);
    db = database.db;
  });
  afterAll(async () => {
    await database?.close();
    await target?.drop();
  });
  // Every test starts from an empty log and head 0.
  beforeEach(async () => {
    for (const table of ['feed_pending', 'feed_dead_letters', 'feeds', 'change_log'] as const) await db.deleteFrom(table).execute();
    if (kind === 'postgres') await db.deleteFrom('change_staged').execute();
    await db.updateTable('change_head').set({ seq: 0 }).where('id', '=', 1).execute();
  });

  it('numbers the changes of one transaction head+1..head+N in order, with the columns given', async () => {
    await append(db, [change('warm-up', null)]);
    const before = await headSeq(db);
    expect(before).toBe(1);
    await append(
      db,
      [
        { type: 'dev.forgesync.ref.created', module: 'replication', scope: 'alpha', key: 'alpha refs/heads/main', subject: 'refs/heads/main', data: { n: 1 } },
        { type: 'dev.forgesync.issue', module: 'importer', scope: 'imp', key: 'imp issue 7', subject: null, data: { action: 'updated', number: 7 }, object: { importId: 42, type: 'issue', key: '7' } },
        change('plain', null),
      ],
      1234,
    );
    expect(await headSeq(db)).toBe(before + 3);
    expect((await changesAfter(db, before, 100)).map(plain)).toEqual([
      { seq: 2, type: 'dev.forgesync.ref.created', module: 'replication', scope: 'alpha', key: 'alpha refs/heads/main', subject: 'refs/heads/main', data: { n: 1 }, recordedAt: 1234 },
      { seq: 3, type: 'dev.forgesync.issue', module: 'importer', scope: 'imp', key: 'imp issue 7', subject: null, data: { action: 'updated', number: 7 }, object: { id: '7', json: null }, recordedAt: 1234 },
      { seq: 4, type: 'dev.forgesync.test', module: 'replication', scope: 'scope', key: 'plain', subject: null, data: null, recordedAt: 1234 },
    ]);
    const raw = await db.selectFrom('change_log').select(['seq', 'import_id', 'object_type', 'object_key']).where('seq', '>', before).orderBy('seq').execute();
    expect(raw.map((row) => [Number(row.seq), row.import_id === null ? null : Number(row.import_id), row.object_type, row.object_key])).toEqual([
      [2, null, null, null],
      [3, 42, 'issue', '7'],
      [4, null, null, null],
    ]);

    // More than one INSERT chunk (50 rows each), in one batch.
    const many = range(0, 119).map((i) => change('many', { i }));
    await runBatch(db, () => appending(db, many, 5));
    expect(await headSeq(db)).toBe(4 + 120);
    const rows = await changesAfter(db, 4, 500);
    expect(seqs(rows)).toEqual(range(5, 124));
    expect(rows.map((row) => row.data?.i)).toEqual(range(0, 119));
  });

  it('leaves no rows and does not move the head when the transaction rolls back', async () => {
    await append(db, [change('a', 1), change('a', 2)]);
    const before = await headSeq(db);
    const doomed = [change('doomed', 1), change('doomed', 2), change('doomed', 3)];
    await expect(runBatch(db, function* () { yield* appending(db, doomed); throw new Error('the batch failed after the append'); })).rejects.toThrow('the batch failed after the append');
    // A statement the database refuses (change_head's primary key) after the append.
    await expect(runBatch(db, function* () { yield* appending(db, doomed); yield* run(db.insertInto('change_head').values({ id: 1, seq: 0 })); })).rejects.toThrow();
    // The same in a guarded list (what an import's page and a feed's run write).
    await expect(runBatch(db, guardedList({ guards: [], steps: [...appendChanges(db, doomed, 1), db.insertInto('change_head').values({ id: 1, seq: 0 })] }))).rejects.toThrow();
    expect(await headSeq(db)).toBe(before);
    expect((await changesAfter(db, before, 100)).map(plain)).toEqual([]);
    // No gap: the next change takes the very next number.
    await append(db, [change('next', 1)]);
    expect(seqs(await changesAfter(db, 0, 100))).toEqual(range(1, before + 1));
  });

  if (kind === 'postgres') it('lets appenders commit side by side and never lets a reader pass a change still uncommitted (PostgreSQL: readers number what has committed)', async () => {
    const first = new pg.Client({ connectionString: target.url });
    const second = new pg.Client({ connectionString: target.url });
    await first.connect();
    await second.connect();
    try {
      // The first appender stays inside its transaction (paused, say) after appending.
      await first.query('BEGIN');
      for (const query of compiled(db, [change('first', 1), change('first', 2), change('first', 3)])) await first.query(query.sql, [...query.parameters]);
      // The second neither waits for it nor is held back by it: it commits, and a reader sees its changes at once.
      await second.query('BEGIN');
      for (const query of compiled(db, [change('second', 1), change('second', 2)])) await second.query(query.sql, [...query.parameters]);
      await second.query('COMMIT');
      const afterSecond = await changesAfter(db, 0, 100);
      expect(afterSecond.map((row) => [row.seq, row.key, row.data])).toEqual([[1, 'second', 1], [2, 'second', 2]]);
      expect(await headSeq(db)).toBe(2);

      // The first's changes, once committed, come after what a reader has seen: none is numbered below it.
      await first.query('COMMIT');
      expect(await changesAfter(db, 0, 100)).toHaveLength(5);
      expect((await changesAfter(db, 2, 100)).map((row) => [row.seq, row.key, row.data])).toEqual([[3, 'first', 1], [4, 'first', 2], [5, 'first', 3]]);
      expect(await db.selectFrom('change_staged').select('id').execute()).toEqual([]);
    } finally {
      await first.end();
      await second.end();
    }
  });

  if (kind === 'postgres') it('numbers each staged change once when readers race (PostgreSQL: numberers take turns on the head row)', async () => {
    const others = await Promise.all(range(1, 3).map(() => openDatabase(target.url)));
    try {
      for (let round = 0; round < 20; round++) {
        await append(db, range(0, 9).map((i) => change(`r${round}`, i)));
        await Promise.all([db, ...others.map((other) => other.db)].map((on) => numberStagedChanges(on)));
      }
      const rows = await changesAfter(db, 0, 1000);
      expect(seqs(rows)).toEqual(range(1, 200));
      expect(rows.map((row) => `${row.key}.${row.data}`)).toEqual(range(0, 19).flatMap((round) => range(0, 9).map((i) => `r${round}.${i}`)));
    } finally {
      await Promise.all(others.map((other) => other.close()));
    }
  });

  if (kind === 'sqlite') it('never lets a reader pass a lower number still uncommitted (SQLite: the second appender waits for the write lock)', async () => {
    const handle = sqliteHandle(db)!;
    const first = new BetterSqlite3(handle.raw.name, { timeout: 5000 });
    const impatient = new BetterSqlite3(handle.raw.name, { timeout: 0 });
    try {
      first.exec('BEGIN IMMEDIATE');
      for (const query of compiled(db, [change('first', 1), change('first', 2), change('first', 3)])) first.prepare(query.sql).run([...query.parameters]);
      // A second connection in another thread (the store's off-thread writer) appends meanwhile: it waits.
      let settled = false;
      const secondWrite = handle.writer!.write({ guards: [], steps: compiled(db, [change('second', 1), change('second', 2)]) }).finally(() => (settled = true));
      let code: string | undefined;
      try {
        impatient.exec('BEGIN IMMEDIATE');
      } catch (error) {
        code = (error as { code?: string }).code;
      }
      expect(code, 'BEGIN IMMEDIATE while another connection holds the write lock').toBe('SQLITE_BUSY');
      await sleep(300);
      expect(settled, 'the second append waits for the first transaction').toBe(false);
      expect(await changesAfter(db, 0, 100)).toEqual([]);
      expect(await headSeq(db)).toBe(0);

      first.exec('COMMIT');
      // Whenever the reader looks, it sees a prefix: the first's numbers, then the second's after them.
      const views: number[][] = [];
      for (let view = seqs(await changesAfter(db, 0, 100)); ; view = seqs(await changesAfter(db, 0, 100))) {
        views.push(view);
        expect([range(1, 3), range(1, 5)]).toContainEqual(view);
        if (view.length === 5) break;
        await tick();
      }
      expect(await secondWrite).toBe('committed');
      expect((await changesAfter(db, 0, 100)).map((row) => row.key)).toEqual(['first', 'first', 'first', 'second', 'second']);
    } finally {
      first.close();
      impatient.close();
    }
  });

  it(`gives a tailing reader every change of 8 concurrent writers exactly once, in order, without gaps (seed ${SEED})`, async () => {
    // A second open of the same database: on SQLite another main-thread connection and another writer thread; on PostgreSQL another pool.
    const other = await openDatabase(target.url);
    try {
      const routes: ((changes: ChangeInput[]) => Promise<unknown>)[] = [(changes) => append(db, changes), (changes) => append(other.db, changes)];
      if (kind === 'sqlite') {
        for (const on of [db, other.db]) routes.push((changes) => sqliteHandle(on)!.writer!.write({ guards: [], steps: compiled(on, changes) }));
      }
      const next = random(SEED);
      const written: string[][] = Array.from({ length: 8 }, () => []);
      const writers = written.map(async (mine, writer) => {
        for (let tx = 0; tx < 50; tx++) {
          const size = 1 + Math.floor(next() * 5);
          const changes = range(0, size - 1).map((i) => change(`w${writer}`, { writer, tx, i }));
          await routes[writer % routes.length]!(changes);
          mine.push(...range(0, size - 1).map((i) => `${tx}.${i}`));
          await (next() < 0.3 ? sleep(next() * 3) : tick());
        }
      });

      let writing = true;
      let cursor = 0;
      let readsWhileWriting = 0;
      const seen: ChangeRow[] = [];
      const reader = (async () => {
        for (;;) {
          const last = !writing; // one more read after the writers are done
          const rows = await changesAfter(db, cursor, 100);
          for (const row of rows) {
            expect(row.seq, `seed ${SEED}: after ${cursor} the reader got ${row.seq}`).toBe(cursor + 1);
            cursor = row.seq;
            seen.push(row);
          }
          if (!last && rows.length > 0) readsWhileWriting++;
          if (last && rows.length === 0) return;
          await tick();
        }
      })();
      await Promise.all([Promise.all(writers).finally(() => (writing = false)), reader]);

      const total = written.reduce((sum, mine) => sum + mine.length, 0);
      expect(await headSeq(db)).toBe(total);
      expect(seqs(seen)).toEqual(range(1, total));
      for (const [writer, mine] of written.entries()) {
        const theirs = seen.filter((row) => row.key === `w${writer}`).map((row) => `${row.data?.tx}.${row.data?.i}`);
        expect(theirs, `seed ${SEED}: writer ${writer}'s changes, in its order`).toEqual(mine);
      }
      expect(readsWhileWriting, 'the reader tailed the log while it was being written').toBeGreaterThan(1);
    } finally {
      await other.close();
    }
  });

  it('pruneChangeLog deletes only old changes at or below every feed cursor (and below held-back ones)', async () => {
    await append(db, range(1, 4).map((i) => change('old', i)), 1000); // seq 1..4
    await append(db, range(5, 8).map((i) => change('new', i)), 5000); // seq 5..8
    const feed = { sink: 'http://sink.invalid', batch: 10, created_at: 0, updated_at: 0 };
    await db.insertInto('feeds').values([{ ...feed, name: 'ahead', cursor: 6 }, { ...feed, name: 'behind', cursor: 3 }]).execute();
    const left = async () => seqs(await changesAfter(db, 0, 100));

    expect(await pruneChangeLog(db, 3000)).toBe(3); // below the slowest feed's cursor (3) and old
    expect(await left()).toEqual(range(4, 8));
    await db.updateTable('feeds').set({ cursor: 8 }).where('name', '=', 'behind').execute();
    expect(await pruneChangeLog(db, 3000)).toBe(1); // 4: 5 and 6 are below the cursors but too recent
    expect(await left()).toEqual(range(5, 8));

    const { id } = await db.selectFrom('feeds').select('id').where('name', '=', 'ahead').executeTakeFirstOrThrow();
    await db.insertInto('feed_pending').values({ feed_id: Number(id), seq: 6, change_key: 'new', attempts: 1, next_at: 0, last_error: null }).execute();
    expect(await pruneChangeLog(db, 10_000)).toBe(1); // 5: 6 is held back
    expect(await left()).toEqual(range(6, 8));
    await db.deleteFrom('feed_pending').execute();
    expect(await pruneChangeLog(db, 10_000)).toBe(1); // 6, the lowest cursor; 7 and 8 not delivered yet
    expect(await left()).toEqual([7, 8]);

    await db.deleteFrom('feeds').execute();
    expect(await pruneChangeLog(db, 10_000)).toBe(2); // no feed needs anything
    expect(await left()).toEqual([]);
    // Pruning never hands a number out again.
    await append(db, [change('after', 1)]);
    expect(await left()).toEqual([9]);
  });
});
