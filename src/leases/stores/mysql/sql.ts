import { createHash } from 'node:crypto';
import type { LeaseHolder } from '../../types.js';

/*
 * SQL of the MySQL/MariaDB lease store. The exclusion is GET_LOCK on a
 * connection pinned to the lease; the table only carries what GET_LOCK cannot:
 * the ttl, the fence and the owner. Times are UTC_TIMESTAMP(3) (server clock,
 * independent of the session time_zone) stored in DATETIME(3) and read back
 * with mysql2's `timezone: 'Z'`.
 *
 * Statements are sent as one multi-statement text query (multipleStatements)
 * so a hot operation costs a single round trip; values are always `?`
 * placeholders, escaped by mysql2, never concatenated.
 */

export const TABLE = 'forgesync_leases';

// Rows are never deleted: release only clears token, conn_id and expires_at,
// so the fence of a key keeps growing across releases, crashes and restarts.
// utf8mb4_bin makes keys byte exact (and ORDER BY code point order).
// token is VARCHAR(128) rather than CHAR(36): the store treats tokens as
// opaque, and CHAR pads, which would make "a" and "a " the same token.
export const CREATE_TABLE = `CREATE TABLE IF NOT EXISTS ${TABLE} (
  lease_key   VARCHAR(255) NOT NULL PRIMARY KEY,
  token       VARCHAR(128) NULL,
  fence       BIGINT UNSIGNED NOT NULL,
  owner_name  VARCHAR(128),
  owner_pid   INT,
  owner_host  VARCHAR(255),
  conn_id     BIGINT UNSIGNED,
  acquired_at DATETIME(3),
  expires_at  DATETIME(3)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin`;

/** Probe: fails with ER_NO_SUCH_TABLE (1146) when the table is missing. */
export const PROBE_TABLE = `SELECT 1 FROM ${TABLE} LIMIT 0`;

const LOCK_HASH_CHARS = 61; // 'fs:' + 61 hex = 64, MySQL's lock name limit

/** GET_LOCK name of a key: fixed length whatever the key; same as LOCK_NAME_SQL. */
export function lockName(key: string): string {
  return 'fs:' + createHash('sha256').update(key, 'utf8').digest('hex').slice(0, LOCK_HASH_CHARS);
}

/** The lock name computed by the server from the row (SHA2 hashes the utf8mb4 bytes). */
const LOCK_NAME_SQL = `CONCAT('fs:', LEFT(SHA2(lease_key, 256), ${LOCK_HASH_CHARS}))`;

/**
 * A row is a live holder only while its ttl runs AND its recorded connection
 * still holds the GET_LOCK: a crashed holder's lock is free at once, and then
 * the key is free whatever the row says.
 */
const LIVE = `token IS NOT NULL AND expires_at > UTC_TIMESTAMP(3) AND IS_USED_LOCK(${LOCK_NAME_SQL}) = conn_id`;

const HOLDER_COLUMNS = 'lease_key, fence, owner_name, owner_pid, owner_host, acquired_at, expires_at';
const EXPIRES = 'UTC_TIMESTAMP(3) + INTERVAL ? MICROSECOND';

/**
 * Try GET_LOCK; if it was granted, take over the row (fence + 1) in the same
 * round trip; then read the row back, with who holds the lock, for either
 * outcome. Values: lockName, timeoutSec, key, token, owner name, pid, host,
 * ttlUs, then again token, name, pid, host, ttlUs, then lockName, key.
 * The update values are repeated rather than written VALUES(col), which
 * MySQL 8 deprecates and MariaDB has no replacement for.
 */
export const ACQUIRE = `SET @fs_got = GET_LOCK(?, ?);
INSERT INTO ${TABLE} (lease_key, token, fence, owner_name, owner_pid, owner_host, conn_id, acquired_at, expires_at)
  SELECT ?, ?, 1, ?, ?, ?, CONNECTION_ID(), UTC_TIMESTAMP(3), ${EXPIRES} FROM DUAL WHERE @fs_got = 1
  ON DUPLICATE KEY UPDATE fence = fence + 1, token = ?, owner_name = ?, owner_pid = ?, owner_host = ?,
    conn_id = CONNECTION_ID(), acquired_at = UTC_TIMESTAMP(3), expires_at = ${EXPIRES};
SELECT @fs_got AS got, COALESCE(IS_USED_LOCK(?), 0) AS lock_conn, l.token, l.conn_id,
    l.expires_at > UTC_TIMESTAMP(3) AS unexpired, ${prefixed('l.', HOLDER_COLUMNS)}
  FROM (SELECT 1) AS one LEFT JOIN ${TABLE} AS l ON l.lease_key = ?`;

/**
 * Renew a lease of ours that has not lapsed. ROW_COUNT() counts matched rows
 * (mysql2 connects with CLIENT_FOUND_ROWS). Values: ttlUs, key, token, key.
 */
export const EXTEND = `UPDATE ${TABLE} SET expires_at = ${EXPIRES}
  WHERE lease_key = ? AND token = ? AND expires_at > UTC_TIMESTAMP(3);
SELECT ROW_COUNT() AS matched, token, expires_at FROM ${TABLE} WHERE lease_key = ?`;

/**
 * Clear our row (even if its ttl just ran out: nobody else took the key,
 * taking it replaces the token) and free the lock, on the pinned connection.
 * Values: key, token, lockName.
 */
export const RELEASE = `UPDATE ${TABLE} SET token = NULL, conn_id = NULL, expires_at = NULL
  WHERE lease_key = ? AND token = ?;
SELECT ROW_COUNT() AS cleared, RELEASE_LOCK(?) AS freed`;

/** Frees the lock without touching the row (the row is no longer ours). */
export const RELEASE_LOCK_ONLY = `SELECT RELEASE_LOCK(?) AS freed`;

/** Clears a row whose token we saw; harmless if it changed meanwhile. Values: key, token. */
export const CLEAR_ROW = `UPDATE ${TABLE} SET token = NULL, conn_id = NULL, expires_at = NULL
  WHERE lease_key = ? AND token = ?`;

export const INSPECT = `SELECT ${HOLDER_COLUMNS}, token, conn_id FROM ${TABLE} WHERE lease_key = ? AND ${LIVE}`;

// '!' as the LIKE escape: unlike '\' it means the same with NO_BACKSLASH_ESCAPES.
export const LIST = `SELECT ${HOLDER_COLUMNS} FROM ${TABLE}
  WHERE lease_key LIKE ? ESCAPE '!' AND ${LIVE} ORDER BY lease_key`;

export const LOCK_OWNER = `SELECT COALESCE(IS_USED_LOCK(?), 0) AS lock_conn`;

export function likePrefix(prefix: string): string {
  return prefix.replace(/[!%_]/g, (c) => `!${c}`) + '%';
}

export interface HolderRow {
  lease_key: string;
  fence: string; // BIGINT arrives as a string (bigNumberStrings); BigInt keeps it exact
  owner_name: string | null;
  owner_pid: number | null;
  owner_host: string | null;
  acquired_at: Date;
  expires_at: Date;
}

export function toHolder(row: HolderRow): LeaseHolder {
  return {
    key: row.lease_key,
    owner: {
      name: row.owner_name ?? '',
      pid: row.owner_pid ?? 0,
      host: row.owner_host ?? '',
      acquiredAt: row.acquired_at,
    },
    fence: BigInt(row.fence),
    expiresAt: row.expires_at,
  };
}

function prefixed(alias: string, columns: string): string {
  return columns
    .split(', ')
    .map((c) => alias + c)
    .join(', ');
}
