import type Database from 'better-sqlite3';
import { LeaseBackendUnavailableError, UnsupportedLeaseUrlError } from '../errors.js';
import { holderFromRow, type HolderColumns } from './holder-row.js';
import type { LeaseHolder, LeaseStore, StoreAcquireRequest, StoreAcquireResult, StoreExtendResult } from '../types.js';
import { openSqliteFile, sqliteFilePath } from '../../util/sqlite-url.js';

// Rows outlive their holders (token NULL after release) so that the fence
// keeps growing per key across holders and crashes.
const SCHEMA = `
CREATE TABLE IF NOT EXISTS forgesync_leases (
  key         TEXT PRIMARY KEY,
  token       TEXT,
  fence       INTEGER NOT NULL,
  owner_name  TEXT,
  owner_pid   INTEGER,
  owner_host  TEXT,
  acquired_at INTEGER,
  expires_at  INTEGER
) WITHOUT ROWID`;

const HOLDER_COLUMNS = 'key, fence, owner_name, owner_pid, owner_host, acquired_at, expires_at';

interface HolderRow extends HolderColumns {
  key: string;
}

const toHolder = (row: HolderRow): LeaseHolder => holderFromRow(row.key, row);

/** Opens the SQLite file of `url` and makes sure the leases table is there. */
function openLeaseDb(url: string): Database.Database {
  let file: string;
  try {
    file = sqliteFilePath(url);
  } catch (error) {
    throw new UnsupportedLeaseUrlError((error as Error).message);
  }
  let db: Database.Database;
  try {
    db = openSqliteFile(file);
    db.defaultSafeIntegers(true);
    db.exec(SCHEMA);
  } catch (error) {
    throw new LeaseBackendUnavailableError('sqlite', url, error);
  }
  return db;
}

/** The statements of the store, prepared once. */
function prepareStatements(db: Database.Database) {
  // pluck: the fence itself rather than a row object around it (this runs on every acquire).
  const acquire = db.prepare<[string, string, string, number, string, number, number], bigint>(`
    INSERT INTO forgesync_leases (key, token, fence, owner_name, owner_pid, owner_host, acquired_at, expires_at)
    VALUES (?, ?, 1, ?, ?, ?, ?, ?)
    ON CONFLICT (key) DO UPDATE SET
      token = excluded.token, fence = fence + 1,
      owner_name = excluded.owner_name, owner_pid = excluded.owner_pid, owner_host = excluded.owner_host,
      acquired_at = excluded.acquired_at, expires_at = excluded.expires_at
    WHERE token IS NULL OR expires_at <= excluded.acquired_at
    RETURNING fence`).pluck();
  const live = db.prepare<[string, number], HolderRow>(
    `SELECT ${HOLDER_COLUMNS} FROM forgesync_leases WHERE key = ? AND token IS NOT NULL AND expires_at > ?`,
  );
  const extend = db.prepare<[number, string, string, number], { expires_at: bigint }>(
    `UPDATE forgesync_leases SET expires_at = ? WHERE key = ? AND token = ? AND expires_at > ? RETURNING expires_at`,
  );
  const tokenOf = db.prepare<[string], { token: string | null }>(`SELECT token FROM forgesync_leases WHERE key = ?`);
  const release = db.prepare<[string, string]>(
    `UPDATE forgesync_leases SET token = NULL, expires_at = NULL WHERE key = ? AND token = ?`,
  );
  const listAll = db.prepare<[number], HolderRow>(
    `SELECT ${HOLDER_COLUMNS} FROM forgesync_leases WHERE token IS NOT NULL AND expires_at > ? ORDER BY key`,
  );
  // substr() rather than LIKE: keys may contain % and _ and LIKE ignores case.
  const listPrefix = db.prepare<[number, string, string], HolderRow>(
    `SELECT ${HOLDER_COLUMNS} FROM forgesync_leases
     WHERE token IS NOT NULL AND expires_at > ? AND substr(key, 1, length(?)) = ? ORDER BY key`,
  );
  // raiseFence: max(fence, floor + 1) for the live lease of this token, the new fence back.
  // Later acquires take over the row with fence + 1, so they continue above it.
  // Values: floor, key, token, now (ms). Returns the fence, or no row when the token does
  // not hold the key (row cleared, taken over, expired or deleted); then nothing changed.
  const raise = db.prepare<[bigint, string, string, number], bigint>(
    `UPDATE forgesync_leases SET fence = max(fence, ? + 1) WHERE key = ? AND token = ? AND expires_at > ? RETURNING fence`,
  ).pluck();
  const forceAny = db.prepare<[string, number]>(
    `UPDATE forgesync_leases SET token = NULL, expires_at = NULL WHERE key = ? AND token IS NOT NULL AND expires_at > ?`,
  );
  const forceFence = db.prepare<[string, number, bigint]>(
    `UPDATE forgesync_leases SET token = NULL, expires_at = NULL
     WHERE key = ? AND token IS NOT NULL AND expires_at > ? AND fence = ?`,
  );
  return { acquire, live, extend, tokenOf, release, listAll, listPrefix, raise, forceAny, forceFence };
}

/**
 * The embedded lease backend: a table in the project's SQLite file. Every
 * operation is one statement, so SQLite's write lock makes it atomic across
 * all processes sharing the file (a CLI beside a running server). Times are
 * epoch milliseconds of this machine's clock, the only clock all those
 * processes share.
 */
export async function createSqliteStore(url: string): Promise<LeaseStore> {
  const db = openLeaseDb(url);
  const { acquire, live, extend, tokenOf, release, listAll, listPrefix, raise, forceAny, forceFence } = prepareStatements(db);

  function take({ key, token, ttlMs, owner, withHolder }: StoreAcquireRequest): StoreAcquireResult {
    const now = Date.now();
    const fence = acquire.get(key, token, owner.name, owner.pid, owner.host, now, now + ttlMs);
    if (fence !== undefined) return { acquired: true, fence, acquiredAt: new Date(now), expiresAt: new Date(now + ttlMs) };
    if (!withHolder) return { acquired: false, holder: null };
    const holder = live.get(key, now);
    return { acquired: false, holder: holder ? toHolder(holder) : null };
  }

  return {
    kind: 'sqlite',
    async acquire(request: StoreAcquireRequest): Promise<StoreAcquireResult> {
      return take(request);
    },
    // The statement answers synchronously, so `then` runs at once: no promise hop before it.
    acquireThen<T>(request: StoreAcquireRequest, then: (result: StoreAcquireResult) => T): Promise<T> {
      try {
        return Promise.resolve(then(take(request)));
      } catch (error) {
        return Promise.reject(error);
      }
    },
    async extend(key: string, token: string, ttlMs: number): Promise<StoreExtendResult> {
      const now = Date.now();
      const row = extend.get(now + ttlMs, key, token, now);
      if (row) return { extended: true, expiresAt: new Date(Number(row.expires_at)) };
      return { extended: false, reason: tokenOf.get(key)?.token === token ? 'expired' : 'lost' };
    },
    async release(key: string, token: string): Promise<boolean> {
      return release.run(key, token).changes > 0;
    },
    async raiseFence(key: string, token: string, floor: bigint): Promise<bigint | null> {
      return raise.get(floor, key, token, Date.now()) ?? null;
    },
    async inspect(key: string): Promise<LeaseHolder | null> {
      const row = live.get(key, Date.now());
      return row ? toHolder(row) : null;
    },
    async list(prefix: string): Promise<LeaseHolder[]> {
      const rows = prefix ? listPrefix.all(Date.now(), prefix, prefix) : listAll.all(Date.now());
      return rows.map(toHolder);
    },
    async forceRelease(key: string, fence?: bigint): Promise<boolean> {
      const now = Date.now();
      const result = fence === undefined ? forceAny.run(key, now) : forceFence.run(key, now, fence);
      return result.changes > 0;
    },
    async ping(): Promise<void> {
      db.prepare('SELECT 1').get();
    },
    async close(): Promise<void> {
      if (db.open) db.close();
    },
  };
}
