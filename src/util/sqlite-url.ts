import { mkdirSync } from 'node:fs';
import { dirname, isAbsolute, resolve } from 'node:path';
import BetterSqlite3 from 'better-sqlite3';

/**
 * The file path in a `sqlite:` URL. Accepts `sqlite:relative/file.db`,
 * `sqlite:/abs/file.db`, `sqlite:///abs/file.db` and `sqlite::memory:`.
 */
export function sqliteFilePath(url: string): string {
  let path = url.replace(/^sqlite:/i, '');
  if (path.startsWith('///')) path = path.slice(2);
  else if (path.startsWith('//')) path = path.slice(2);
  if (path === '' ) throw new Error(`sqlite URL "${url}" names no file; use sqlite:<path to file>`);
  if (path === ':memory:') return path;
  return isAbsolute(path) ? path : resolve(path);
}

/** How long a statement waits for another process's write lock. */
export const BUSY_TIMEOUT_MS = 5_000;

/**
 * Opens (creating its directory) the SQLite file that the registry and the
 * embedded lease store share: WAL so readers never block the writer, a busy
 * timeout so processes sharing the file wait for each other's short writes.
 */
export function openSqliteFile(file: string): BetterSqlite3.Database {
  if (file !== ':memory:') mkdirSync(dirname(file), { recursive: true });
  const db = new BetterSqlite3(file, { timeout: BUSY_TIMEOUT_MS });
  for (const pragma of SQLITE_PRAGMAS) db.pragma(pragma);
  return db;
}

/** What every connection to the file sets (the off-thread writer's too, see store/sqlite-writer.ts). */
export const SQLITE_PRAGMAS: readonly string[] = ['journal_mode = WAL', `busy_timeout = ${BUSY_TIMEOUT_MS}`, 'synchronous = NORMAL', 'foreign_keys = ON'];
