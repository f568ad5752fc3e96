import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import BetterSqlite3 from 'better-sqlite3';
import { sql } from 'kysely';
import { afterAll, describe, expect, it } from 'vitest';
import { openDatabase } from '../../src/store/database.js';
import {
  DatabaseUnavailableError,
  InvalidDatabaseOptionError,
  UnsupportedDatabaseUrlError,
} from '../../src/store/errors.js';
import { SourceRepository } from '../../src/replication/store/sources.js';

const dir = mkdtempSync(join(tmpdir(), 'forgesync-db-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('openDatabase', () => {
  it('refuses an unsupported or empty URL with UnsupportedDatabaseUrlError, redacting credentials', async () => {
    const mysql = openDatabase('mysql://root:hunter22@db/forgesync');
    await expect(mysql).rejects.toBeInstanceOf(UnsupportedDatabaseUrlError);
    await expect(mysql).rejects.toThrow(/mysql:\/\/root:\*\*\*@db.*use sqlite:<path to file>, postgres:\/\//);
    await expect(mysql).rejects.not.toThrow(/hunter22/);
    await expect(openDatabase('')).rejects.toBeInstanceOf(UnsupportedDatabaseUrlError);
    await expect(openDatabase('sqlite:')).rejects.toBeInstanceOf(UnsupportedDatabaseUrlError);
  });

  it('reports an unreachable PostgreSQL with DatabaseUnavailableError naming the redacted URL', async () => {
    const opening = openDatabase('postgres://forgesync:s3cret-pw@127.0.0.1:1/forgesync');
    await expect(opening).rejects.toBeInstanceOf(DatabaseUnavailableError);
    await expect(opening).rejects.toThrow(/postgres database at postgres:\/\/forgesync:\*\*\*@127\.0\.0\.1:1\/forgesync is unreachable/);
    await expect(opening).rejects.not.toThrow(/s3cret-pw/);
  });

  it('refuses a schema name PostgreSQL would alter', async () => {
    await expect(openDatabase('postgres://postgres@127.0.0.1:5432/test', { schema: 'Bad-Name' })).rejects.toBeInstanceOf(
      InvalidDatabaseOptionError,
    );
  });

  it('reports an SQLite file that cannot be opened with DatabaseUnavailableError', async () => {
    const notADirectory = join(dir, 'plain-file');
    writeFileSync(notADirectory, 'x');
    const opening = openDatabase(`sqlite:${join(notADirectory, 'db.sqlite')}`);
    await expect(opening).rejects.toBeInstanceOf(DatabaseUnavailableError);
    await expect(opening).rejects.toThrow(/sqlite database at sqlite:.*plain-file.* is unreachable/);
  });

  it('creates the SQLite parent directory and sets WAL, busy_timeout, foreign keys and synchronous', async () => {
    const database = await openDatabase(`sqlite:${join(dir, 'a', 'b', 'forgesync.db')}`);
    try {
      expect(database.dialect).toBe('sqlite');
      const pragma = async (name: string) =>
        Object.values((await sql<Record<string, unknown>>`${sql.raw(`pragma ${name}`)}`.execute(database.db)).rows[0]!)[0];
      expect(await pragma('journal_mode')).toBe('wal');
      expect(await pragma('busy_timeout')).toBe(5000);
      expect(await pragma('foreign_keys')).toBe(1);
      expect(await pragma('synchronous')).toBe(1); // NORMAL
    } finally {
      await database.close();
    }
  });

  it('never holds the SQLite write lock across an await, so another handle in the process is not blocked', async () => {
    // The lease store shares the registry file through its own handle by default.
    const file = join(dir, 'shared.db');
    const database = await openDatabase(`sqlite:${file}`);
    const other = new BetterSqlite3(file, { timeout: 5000 });
    try {
      other.exec('create table if not exists scratch (n integer)');
      const sources = new SourceRepository(database);
      const started = Date.now();
      await Promise.all(
        Array.from({ length: 20 }, async (_, i) => {
          const writeElsewhere = Promise.resolve().then(() => other.prepare('insert into scratch values (?)').run(i));
          await sources.create({ name: `s${i}`, url: `https://h/s${i}.git` });
          await writeElsewhere;
          await sources.update(`s${i}`, { url: `https://h/t${i}.git` });
          other.prepare('insert into scratch values (?)').run(i);
        }),
      );
      expect(Date.now() - started).toBeLessThan(2000);
      expect(await sources.count()).toBe(20);
      expect(other.prepare('select count(*) as n from scratch').get()).toEqual({ n: 40 });
    } finally {
      other.close();
      await database.close();
    }
  });
});
