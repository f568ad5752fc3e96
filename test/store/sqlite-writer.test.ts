import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sql, type CompiledQuery } from 'kysely';
import { afterAll, describe, expect, it } from 'vitest';
import { sqliteHandle } from '../../src/store/connect.js';
import { openDatabase, type Database } from '../../src/store/database.js';
import { SqliteThreadClosedError } from '../../src/store/sqlite-thread.js';
import type { SqliteWriter } from '../../src/store/sqlite-writer.js';

const dir = mkdtempSync(join(tmpdir(), 'forgesync-writer-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

let files = 0;
async function open(): Promise<{ database: Database; writer: SqliteWriter }> {
  const database = await openDatabase(`sqlite:${join(dir, `db-${++files}.sqlite`)}`);
  await sql`create table t (id integer primary key, v text not null)`.execute(database.db);
  await sql`create table guard (id integer primary key, fence integer not null)`.execute(database.db);
  await sql`insert into guard (id, fence) values (1, 5)`.execute(database.db);
  return { database, writer: sqliteHandle(database.db)!.writer! };
}

const query = (text: string, ...parameters: unknown[]): CompiledQuery => ({ sql: text, parameters, query: undefined as never, queryId: undefined as never });
const rows = async (database: Database) => (await sql<{ id: number; v: string }>`select id, v from t order by id`.execute(database.db)).rows;

describe('SqliteWriter (the off-thread writer of a SQLite file)', () => {
  it('commits a batch whose guards return rows; the main connection reads it once the write resolved', async () => {
    const { database, writer } = await open();
    try {
      const outcome = await writer.write({
        guards: [query('update guard set fence = ? where id = 1 and fence <= ? returning id', 6, 6)],
        steps: [query('insert into t (id, v) values (?, ?), (?, ?)', 1, 'a', 2, 'b')],
      });
      expect(outcome).toBe('committed');
      expect(await rows(database)).toEqual([{ id: 1, v: 'a' }, { id: 2, v: 'b' }]);
    } finally {
      await database.close();
    }
  });

  it("keeps nothing of a batch a guard refuses, the first guard's update included", async () => {
    const { database, writer } = await open();
    try {
      const outcome = await writer.write({
        guards: [query('update guard set fence = ? where id = 1 returning id', 9), query('update guard set fence = fence where id = 2 returning id')],
        steps: [query('insert into t (id, v) values (?, ?)', 1, 'a')],
      });
      expect(outcome).toBe('refused');
      expect(await rows(database)).toEqual([]);
      expect((await sql<{ fence: number }>`select fence from guard where id = 1`.execute(database.db)).rows[0]!.fence).toBe(5);
    } finally {
      await database.close();
    }
  });

  it("rejects a failing statement with SQLite's code, rolls the batch back, and goes on writing", async () => {
    const { database, writer } = await open();
    try {
      const failing = writer.write({ guards: [], steps: [query('insert into t (id, v) values (?, ?)', 1, 'a'), query('insert into t (id, v) values (?, ?)', 1, 'again')] });
      await expect(failing).rejects.toMatchObject({ code: 'SQLITE_CONSTRAINT_PRIMARYKEY' });
      expect(await rows(database)).toEqual([]);
      await expect(writer.write({ guards: [], steps: [query('insert into t (id, v) values (?, ?)', 3, 'c')] })).resolves.toBe('committed');
      expect(await rows(database)).toEqual([{ id: 3, v: 'c' }]);
    } finally {
      await database.close();
    }
  });

  it('answers batches sent at once in order, and closing waits for them', async () => {
    const { database, writer } = await open();
    const writes = Array.from({ length: 50 }, (_, index) => writer.write({ guards: [], steps: [query('insert into t (id, v) values (?, ?)', index, `v${index}`)] }));
    const closing = database.close();
    expect(await Promise.all(writes)).toEqual(Array(50).fill('committed'));
    await closing;
    await expect(writer.write({ guards: [], steps: [] })).rejects.toBeInstanceOf(SqliteThreadClosedError);
    const reopened = await openDatabase(`sqlite:${join(dir, `db-${files}.sqlite`)}`);
    try {
      expect((await rows(reopened)).map((row) => row.id)).toEqual(Array.from({ length: 50 }, (_, index) => index));
    } finally {
      await reopened.close();
    }
  });
});
