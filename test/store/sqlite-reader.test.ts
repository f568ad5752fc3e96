import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sql, type CompiledQuery } from 'kysely';
import { afterAll, describe, expect, it } from 'vitest';
import { sqliteHandle } from '../../src/store/connect.js';
import { openDatabase, type Database } from '../../src/store/database.js';
import type { SqliteReader } from '../../src/store/sqlite-reader.js';
import { SqliteThreadClosedError } from '../../src/store/sqlite-thread.js';

const dir = mkdtempSync(join(tmpdir(), 'forgesync-reader-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

let files = 0;
async function open(): Promise<{ database: Database; reader: SqliteReader }> {
  const database = await openDatabase(`sqlite:${join(dir, `db-${++files}.sqlite`)}`);
  await sql`create table t (id integer primary key, n real, v text, b blob)`.execute(database.db);
  return { database, reader: sqliteHandle(database.db)!.reader! };
}

const query = (text: string, ...parameters: unknown[]): CompiledQuery => ({ sql: text, parameters, query: undefined as never, queryId: undefined as never });

describe('SqliteReader (the off-thread reader of a SQLite file)', () => {
  it('returns rows as arrays of their values, as the main connection reads them: nulls, numbers and any text', async () => {
    const { database, reader } = await open();
    try {
      const texts = ['', 'plain', 'line\nbreak "quoted" \\ é ✓ \u2028 😀', '\u0000nul', 'x'.repeat(100_000), '\ud800 lone surrogate (stored as SQLite stores it)'];
      for (const [index, text] of texts.entries()) {
        await sql`insert into t (id, n, v) values (${index + 1}, ${index === 2 ? null : index * 1.5}, ${index === 3 ? null : text})`.execute(database.db);
      }
      const rows = await reader.rows(query('select id, n, v from t where id >= ? order by id', 1));
      expect(rows).toEqual(sqliteHandle(database.db)!.raw.prepare('select id, n, v from t where id >= ? order by id').raw(true).all(1));
      expect(rows.slice(0, 5)).toEqual(texts.slice(0, 5).map((text, index) => [index + 1, index === 2 ? null : index * 1.5, index === 3 ? null : text]));
      expect(await reader.rows(query('select id from t where id > ?', 100))).toEqual([]);
    } finally {
      await database.close();
    }
  });

  it('sees what is committed, not what the main connection has not committed yet', async () => {
    const { database, reader } = await open();
    try {
      const { raw } = sqliteHandle(database.db)!;
      raw.exec('begin');
      raw.prepare('insert into t (id, v) values (1, ?)').run('pending');
      expect(await reader.rows(query('select v from t'))).toEqual([]);
      raw.exec('commit');
      expect(await reader.rows(query('select v from t'))).toEqual([['pending']]);
    } finally {
      await database.close();
    }
  });

  it('rejects with the SQLite error, refuses a blob, and keeps answering after either', async () => {
    const { database, reader } = await open();
    try {
      await sql`insert into t (id, b) values (1, ${Buffer.from('bytes')})`.execute(database.db);
      await expect(reader.rows(query('select nope from t'))).rejects.toMatchObject({ message: expect.stringContaining('no such column: nope'), code: 'SQLITE_ERROR' });
      await expect(reader.rows(query('select b from t'))).rejects.toThrow(/numbers and text only; column 1 is a object/);
      await expect(reader.rows(query('insert into t (id) values (2)'))).rejects.toThrow(/only for statements that return data/);
      expect(await reader.rows(query('select id from t'))).toEqual([[1]]);
    } finally {
      await database.close();
    }
  });

  it('answers the queries sent before close, then refuses with a typed error', async () => {
    const { database, reader } = await open();
    await sql`insert into t (id, v) values (1, 'a')`.execute(database.db);
    const sent = Array.from({ length: 20 }, () => reader.rows(query('select v from t')));
    await reader.close();
    for (const answer of await Promise.all(sent)) expect(answer).toEqual([['a']]);
    await expect(reader.rows(query('select v from t'))).rejects.toBeInstanceOf(SqliteThreadClosedError);
    await database.close();
  });
});
