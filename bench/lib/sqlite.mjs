// SQLite: forgesync's store vs better-sqlite3 issuing the minimal statements
// itself, each on its own temp file with the same pragmas as forgesync
// (WAL, synchronous=NORMAL, busy_timeout), removed afterwards.
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { forgesyncContender } from './forgesync.mjs';

export const RAW_TABLE = 'bench_raw_leases';

/**
 * Raw: a (key, token, expires_at) WITHOUT ROWID table; acquire is one
 * INSERT … ON CONFLICT DO UPDATE … WHERE expired (changes = 1 means taken),
 * release one DELETE … WHERE key = ? AND token = ?. Prepared once.
 */
function rawContender(file, { ttlMs }) {
  const db = new Database(file);
  db.pragma('journal_mode = WAL');
  db.pragma('busy_timeout = 5000');
  db.pragma('synchronous = NORMAL');
  db.exec(`CREATE TABLE IF NOT EXISTS ${RAW_TABLE} (key TEXT PRIMARY KEY, token TEXT NOT NULL, expires_at INTEGER NOT NULL) WITHOUT ROWID`);
  const acquire = db.prepare(`INSERT INTO ${RAW_TABLE} (key, token, expires_at) VALUES (?, ?, ?)
    ON CONFLICT (key) DO UPDATE SET token = excluded.token, expires_at = excluded.expires_at WHERE expires_at <= ?`);
  const release = db.prepare(`DELETE FROM ${RAW_TABLE} WHERE key = ? AND token = ?`);
  const session = {
    async tryAcquire(key) {
      const token = randomUUID();
      const now = Date.now();
      return acquire.run(key, token, now + ttlMs, now).changes === 1 ? { key, token } : null;
    },
    async release(handle) {
      if (release.run(handle.key, handle.token).changes !== 1) throw new Error(`raw sqlite: ${handle.key} was not ours any more`);
    },
  };
  return {
    name: 'raw',
    role: 'baseline',
    describe: 'better-sqlite3: INSERT…ON CONFLICT DO UPDATE…WHERE expired + DELETE…WHERE token (prepared)',
    sessions: (n) => Array.from({ length: n }, () => session),
    close: async () => db.close(),
  };
}

export async function openSqlite(ctx) {
  const dir = mkdtempSync(join(tmpdir(), 'forgesync-bench-'));
  const url = `sqlite:${join(dir, 'forgesync.db')}`;
  const contenders = [];
  const cleanup = async () => {
    for (const c of contenders) await c.close().catch(() => {});
    rmSync(dir, { recursive: true, force: true });
  };
  const factories = {
    forgesync: (c) => forgesyncContender(url, c),
    raw: async (c) => rawContender(join(dir, 'raw.db'), c),
  };
  try {
    for (const make of Object.values(factories)) contenders.push(await make(ctx));
  } catch (error) {
    await cleanup();
    throw error;
  }
  return { url, contenders, factories, cleanup, notes: [`temp files in ${dir} (removed afterwards)`] };
}
