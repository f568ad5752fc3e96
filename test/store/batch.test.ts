import BetterSqlite3 from 'better-sqlite3';
import { sql, type Kysely } from 'kysely';
import { afterAll, beforeAll, beforeEach, describe, expect, expectTypeOf, it, vi } from 'vitest';
import { guard, guardedList, GuardWithoutTransactionError, run, runBatch } from '../../src/store/batch.js';
import { sqliteHandle } from '../../src/store/connect.js';
import type { Database } from '../../src/store/database.js';
import { prepared } from '../../src/store/sql.js';
import type { Schema } from '../../src/store/types.js';
import { postgresBackend, sqliteBackend, type StoreTarget } from './backends.js';

/*
 * runBatch (store/batch.ts), the one way to write several statements
 * together: statements and guards yielded by a generator, or a guarded list
 * that may go to the SQLite writer thread. Two tables of the test's own:
 * `t` (rows written) and `g` (one guard row, fence 5).
 */

describe.each([sqliteBackend, postgresBackend])('runBatch on $name', (backend) => {
  let target: StoreTarget;
  let database: Database;
  let db: Kysely<Schema>;
  /** The test's tables, which the registry's schema does not name. */
  let any: Kysely<any>;

  beforeAll(async () => {
    target = await backend.fresh();
    database = await target.open();
    db = database.db;
    any = db as unknown as Kysely<any>;
    await sql`create table t (id integer primary key, v text not null)`.execute(db);
    await sql`create table g (id integer primary key, fence integer not null)`.execute(db);
  });
  afterAll(async () => {
    await database?.close();
    await target?.dispose();
  });
  beforeEach(async () => {
    await any.deleteFrom('t').execute();
    await any.deleteFrom('g').execute();
    await any.insertInto('g').values({ id: 1, fence: 5 }).execute();
  });

  const values = async () => (await any.selectFrom('t').select(['id', 'v']).orderBy('id').execute()).map((row) => `${row.id}:${row.v}`);
  const storedFence = async () => Number((await any.selectFrom('g').select('fence').where('id', '=', 1).executeTakeFirstOrThrow()).fence);
  /** The guard of a writer holding `fence`: stores it unless a newer one is stored. */
  const fenced = (fence: number) => any.updateTable('g').set({ fence }).where('id', '=', 1).where('fence', '<=', fence).returning('id');
  const insert = (id: number, v: string) => any.insertInto('t').values({ id, v });

  it('runs prepared queries and Kysely queries in turn, each deciding from the results before it, and returns what the batch returns', async () => {
    const byId = prepared<[id: number], { v: string }>(db, (arg) => any.selectFrom('t').select('v').where('id', '=', arg(0)));
    const result = await runBatch(db, function* () {
      yield* run(insert(1, 'a'));
      const { rows } = yield* run(byId, 1);
      yield* run(insert(2, `${rows[0]!.v}+`));
      return rows.length;
    });
    expect(result).toBe(1);
    // A batch without guards cannot be refused: no null in its type.
    expectTypeOf(result).toEqualTypeOf<number>();
    expect(await values()).toEqual(['1:a', '2:a+']);
  });

  it('keeps nothing of a batch a guard refuses, the earlier statements and guards included, and says null', async () => {
    const refused = await runBatch(db, function* () {
      yield* guard(fenced(6));
      yield* run(insert(1, 'a'));
      yield* guard(fenced(4));
      yield* run(insert(2, 'b'));
      return 'written';
    });
    expect(refused).toBeNull();
    expectTypeOf(refused).toEqualTypeOf<string | null>();
    expect(await values()).toEqual([]);
    expect(await storedFence()).toBe(5);

    const written = await runBatch(db, function* () {
      const { rows } = yield* guard(fenced(6));
      yield* run(insert(1, String(rows[0]!.id)));
      return 'written';
    });
    expect(written).toBe('written');
    expect(await values()).toEqual(['1:1']);
    expect(await storedFence()).toBe(6);
  });

  it('rolls the whole batch back when a statement fails or the batch throws', async () => {
    await expect(runBatch(db, function* () {
      yield* run(insert(1, 'a'));
      yield* run(insert(1, 'again'));
    })).rejects.toThrow();
    await expect(runBatch(db, function* () {
      yield* run(insert(1, 'a'));
      throw new Error('the batch gave up');
    })).rejects.toThrow('the batch gave up');
    expect(await values()).toEqual([]);
  });

  it(`without atomic, ${backend.name === 'sqlite' ? 'is still one transaction (SQLite)' : 'runs each statement on its own (PostgreSQL)'}, and refuses to run a guard`, async () => {
    await expect(runBatch(db, function* () {
      yield* run(insert(1, 'a'));
      yield* run(insert(1, 'again'));
    }, { atomic: false })).rejects.toThrow();
    expect(await values()).toEqual(backend.name === 'sqlite' ? [] : ['1:a']);

    await any.deleteFrom('t').execute();
    await expect(runBatch(db, function* () {
      yield* run(insert(1, 'a'));
      yield* guard(fenced(6));
    }, { atomic: false })).rejects.toBeInstanceOf(GuardWithoutTransactionError);
    expect(await values()).toEqual(backend.name === 'sqlite' ? [] : ['1:a']);
    expect(await storedFence()).toBe(5);
  });

  it('writes a guarded list: true when written, null (nothing kept) when a guard refused it; null steps are skipped', async () => {
    expect(await runBatch(db, guardedList({ guards: [fenced(6)], steps: [insert(1, 'a'), null, insert(2, 'b')] }))).toBe(true);
    expect(await runBatch(db, guardedList({ guards: [fenced(7), fenced(5)], steps: [insert(3, 'c')] }))).toBeNull();
    expect(await values()).toEqual(['1:a', '2:b']);
    expect(await storedFence()).toBe(6);
  });

  if (backend.name === 'sqlite') {
    it('never holds the write lock past the call: another connection may take it at once, without waiting', async () => {
      const raw = sqliteHandle(db)!.raw;
      const other = new BetterSqlite3(raw.name, { timeout: 0 });
      try {
        const pending = runBatch(db, function* () {
          yield* guard(fenced(6));
          yield* run(insert(1, 'a'));
        });
        expect(raw.inTransaction).toBe(false);
        other.exec('BEGIN IMMEDIATE');
        other.exec('COMMIT');
        await pending;
        expect(await values()).toEqual(['1:a']);
      } finally {
        other.close();
      }
    });

    it('sends a large guarded list to the writer thread and keeps a small one here; both are refused alike', async () => {
      const writer = sqliteHandle(db)!.writer!;
      const sent = vi.spyOn(writer, 'write');
      try {
        const rows = (from: number, count: number) => Array.from({ length: count }, (_, index) => insert(from + index, `v${from + index}`));
        // 2 parameters a row: 60 rows reach the 120 parameters from which a list goes to the thread.
        expect(await runBatch(db, guardedList({ guards: [fenced(6)], steps: rows(1, 59) }))).toBe(true);
        expect(sent).not.toHaveBeenCalled();
        expect(await runBatch(db, guardedList({ guards: [fenced(6)], steps: rows(100, 60) }))).toBe(true);
        expect(sent).toHaveBeenCalledTimes(1);
        expect(await runBatch(db, guardedList({ guards: [fenced(5)], steps: rows(200, 60) }))).toBeNull();
        expect(sent).toHaveBeenCalledTimes(2);
        // What the thread committed is read here once the call resolved.
        expect(await values()).toHaveLength(119);
      } finally {
        sent.mockRestore();
      }
    });
  }
});
