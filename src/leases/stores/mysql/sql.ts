import { createHash } from 'node:crypto';
import type { LeaseHolder } from '../../types.js';
import { holderFromRow, type HolderColumns } from '../holder-row.js';
import type { SessionLimits } from '../../../util/database-sessions.js';
import { MAX_TTL_MS } from '../../validate.js';

/*
 * SQL of the MySQL/MariaDB lease store. The exclusion is GET_LOCK on a
 * connection pinned to the lease; the table only carries what GET_LOCK cannot:
 * the ttl, the fence and the owner. Times are UTC_TIMESTAMP(3) (server clock,
 * independent of the session time_zone) stored in DATETIME(3) and read back
 * with mysql2's `timezone: 'Z'`. Values are always `?` placeholders, never
 * concatenated (but for sessionSetup's numbers, computed from settings, one
 * of which sits in a MariaDB-only comment where no placeholder is read).
 *
 * The table is ENGINE=MEMORY: its rows are exactly as durable as the
 * GET_LOCKs they describe. A server restart ends every session, and so frees
 * every lock, and it also empties the table; nothing of value is lost, and no
 * acquire waits for a log flush.
 *
 * Whoever holds a key's GET_LOCK has a row describing it: the statements
 * that take a lock (ACQUIRE_FAST, ACQUIRE_NEW) write the row in the same
 * statement (GET_LOCK sits in their WHERE clause), and MEMORY tables are
 * locked for the whole of a statement, so nobody ever sees the lock taken
 * with the row not yet written. That is why release may leave the row alone:
 * once the lock is free the row is not live (see LIVE), and the next taker
 * overwrites it.
 */

export const TABLE = 'forgesync_leases';

/** Cap on the table's memory, set (per table) when the table is created or rebuilt. */
export const MAX_TABLE_BYTES = 256 * 1024 * 1024;

// utf8mb4_bin makes keys byte exact (and ORDER BY code point order).
// token is VARCHAR(128) rather than CHAR(36): the store treats tokens as
// opaque, and CHAR pads, which would make "a" and "a " the same token.
// MEMORY rows are fixed width (about 3 KB here); see SWEEP for how the table
// is kept to the keys in use.
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
) ENGINE=MEMORY DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin`;

/** A MEMORY table's size cap is the session's max_heap_table_size when it is created or rebuilt. */
export const SET_TABLE_CAP = `SET SESSION max_heap_table_size = ${MAX_TABLE_BYTES}`;

/**
 * Run once on every new session: its limits (see SessionLimits). Lock waits
 * end after the lock timeout, rounded up to seconds (`lock_wait_timeout`:
 * table and metadata locks, which is what the MEMORY table takes;
 * `innodb_lock_wait_timeout`: row locks, should the table have stayed
 * InnoDB); statements after the statement timeout on MariaDB
 * (`max_statement_time`, in an executable comment MySQL skips: MySQL's
 * `max_execution_time` limits SELECTs only, and the client's own limit,
 * QUERY_TIMEOUT_MS, bounds every statement anyway). A limit of 0 leaves the
 * server's. Statements here never hold a transaction open (each is one
 * autocommitted statement), so there is no idle transaction to end.
 *
 * `wait_timeout`, the server's limit on an idle session, is set *above* the
 * longest lease ttl, never below: a held lease's pinned session (its
 * GET_LOCK) is idle between heartbeats (a third of the ttl; for a caller
 * renewing by hand, up to the whole ttl), and the server ending it would
 * end a lease that is still valid. (The server's default, 8 h, would end a
 * 24 h lease renewed every 8 h.) A holder that hangs with its session open
 * does not need it: its lease is taken over when its ttl runs out (a
 * contender KILLs the session, see mysql.ts); one that dies closes it.
 */
export function sessionSetup(limits: SessionLimits | undefined): string {
  const settings = [`wait_timeout = ${Math.ceil(MAX_TTL_MS / 1000) + 3_600}`];
  if (limits?.lockTimeoutMs) {
    const seconds = Math.max(1, Math.ceil(limits.lockTimeoutMs / 1000));
    settings.push(`lock_wait_timeout = ${seconds}`, `innodb_lock_wait_timeout = ${seconds}`);
  }
  const statement = limits?.statementTimeoutMs ? ` /*M!100108 , max_statement_time = ${(limits.statementTimeoutMs / 1000).toFixed(3)} */` : '';
  return `SET SESSION ${settings.join(', ')}${statement}`;
}

/** Engine and size cap of the table; no row when the table is missing. */
export const TABLE_STATUS = `SELECT ENGINE AS engine, MAX_DATA_LENGTH AS max_bytes FROM information_schema.TABLES
  WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = '${TABLE}'`;

/**
 * Moves a table of an earlier version (InnoDB: two log flushes per acquire
 * and release) to MEMORY, or re-applies the size cap, which a server
 * restart resets to the global max_heap_table_size. Keeps the rows.
 */
export const TO_MEMORY = `ALTER TABLE ${TABLE} ENGINE=MEMORY`;

const LOCK_HASH_CHARS = 61; // 'fs:' + 61 hex = 64, MySQL's lock name limit

const lockNames = new Map<string, string>();

/** GET_LOCK name of a key: fixed length whatever the key; same as LOCK_NAME_SQL. */
export function lockName(key: string): string {
  let name = lockNames.get(key);
  if (name === undefined) {
    name = 'fs:' + createHash('sha256').update(key, 'utf8').digest('hex').slice(0, LOCK_HASH_CHARS);
    // A small cache: workers tend to take the same few keys over and over.
    if (lockNames.size >= 1024) lockNames.delete(lockNames.keys().next().value!);
    lockNames.set(key, name);
  }
  return name;
}

/** The lock name computed by the server from the row (SHA2 hashes the utf8mb4 bytes). */
const LOCK_NAME_SQL = `CONCAT('fs:', LEFT(SHA2(lease_key, 256), ${LOCK_HASH_CHARS}))`;

/**
 * Server time in microseconds since the epoch, from UTC_TIMESTAMP so that no
 * session time zone (and no daylight-saving fold) is involved.
 */
const NOW_US = `TIMESTAMPDIFF(MICROSECOND, '1970-01-01', UTC_TIMESTAMP(6))`;

/*
 * The fence is a hybrid logical clock: GREATEST(previous fence + 1, server
 * time in µs). It strictly increases per key:
 *  - acquires of one key are serialised by its GET_LOCK, and each one reads
 *    the previous fence from the row and writes a larger one in the same
 *    statement, so while the row exists every holder's fence exceeds the
 *    previous holder's, whatever the clock does (RAISE_FENCE included);
 *  - the row can vanish (a server restart empties the MEMORY table; SWEEP
 *    deletes rows idle for an hour), and then the fence restarts from the
 *    clock alone. Every earlier fence was at most the clock of its time
 *    (unless a clock step back had pushed the +1 branch ahead, by no more than
 *    that step), so the new fence is larger unless the server clock stepped
 *    back by more than the downtime (or the hour) since. A fence raised ahead
 *    of the clock (RAISE_FENCE) is not: SWEEP keeps its row until the clock is
 *    an hour past it, but a restart can take it; raiseFence is what lifts the
 *    next holder back above it.
 * Fences are thus about 1.8e15 (the clock in µs), larger than any fence of the
 * earlier InnoDB version, which counted from 1.
 *
 * LAST_INSERT_ID(expr) hands the new fence back in the OK packet (insertId),
 * so a successful acquire needs no result set.
 */
const NEXT_FENCE = `LAST_INSERT_ID(GREATEST(fence + 1, ${NOW_US}))`;
const EXPIRES = 'UTC_TIMESTAMP(3) + INTERVAL ? MICROSECOND';

/**
 * Acquire: take the lock and the row in one prepared statement if the row
 * exists (GET_LOCK is only evaluated for the one row the key finds).
 * affectedRows = 1: the lock is ours and insertId is the new fence.
 * affectedRows = 0: the row is missing, or the lock is held; then insertId is
 * the holder's fence if its ttl still runs (the OR's second arm, never true,
 * runs only when GET_LOCK failed, so the lock is held, and then by the
 * session the row describes; LAST_INSERT_ID(x) is what the OK packet
 * reports), else 0. Knowing the fence, a holder this process has seen needs
 * no second round trip; otherwise PROBE follows, as it must for a holder
 * whose ttl ran out (it may have to be evicted).
 * Values: token, owner name, pid, host, ttlUs, key, lockName.
 */
export const ACQUIRE_FAST = `UPDATE ${TABLE} SET fence = ${NEXT_FENCE}, token = ?, owner_name = ?, owner_pid = ?,
  owner_host = ?, conn_id = CONNECTION_ID(), acquired_at = UTC_TIMESTAMP(3), expires_at = ${EXPIRES}
  WHERE lease_key = ? AND (GET_LOCK(?, 0) = 1 OR LAST_INSERT_ID(IF(expires_at > UTC_TIMESTAMP(3), fence, 0)) < 0)`;

const HOLDER_COLUMNS = 'lease_key, fence, owner_name, owner_pid, owner_host, acquired_at, expires_at';
const ACQUIRE_COLUMNS = `COALESCE(IS_USED_LOCK(?), 0) AS lock_conn, token, conn_id,
  expires_at > UTC_TIMESTAMP(3) AS unexpired, ${HOLDER_COLUMNS}`;

/**
 * Who holds the key, after ACQUIRE_FAST could not tell: the row and the
 * session holding the lock (0: none). It takes no lock, so that taking a
 * lock always writes the row with it. No row: the key is new (ACQUIRE_NEW).
 * Values: lockName, key.
 */
export const PROBE = `SELECT ${ACQUIRE_COLUMNS} FROM ${TABLE} WHERE lease_key = ?`;

/**
 * Acquire of a key without a row (first use, or its row was swept or lost
 * in a server restart): take the lock and insert or take over the row in
 * one statement, then read the row back with who holds the lock, in one
 * round trip. The first result's affectedRows is > 0 iff the lock was taken.
 * Values: key, token, owner name, pid, host, ttlUs, lockName, then again
 * token, name, pid, host, ttlUs, then lockName, key. The update values are
 * repeated rather than written VALUES(col), which MySQL 8 deprecates.
 */
export const ACQUIRE_NEW = `INSERT INTO ${TABLE} (lease_key, token, fence, owner_name, owner_pid, owner_host, conn_id, acquired_at, expires_at)
  SELECT ?, ?, LAST_INSERT_ID(${NOW_US}), ?, ?, ?, CONNECTION_ID(), UTC_TIMESTAMP(3), ${EXPIRES}
  FROM DUAL WHERE GET_LOCK(?, 0) = 1
  ON DUPLICATE KEY UPDATE fence = ${NEXT_FENCE}, token = ?, owner_name = ?, owner_pid = ?, owner_host = ?,
    conn_id = CONNECTION_ID(), acquired_at = UTC_TIMESTAMP(3), expires_at = ${EXPIRES};
SELECT ${ACQUIRE_COLUMNS} FROM ${TABLE} WHERE lease_key = ?`;

/**
 * Renew a lease of ours that has not lapsed. ROW_COUNT() counts matched rows
 * (mysql2 connects with CLIENT_FOUND_ROWS). Values: ttlUs, key, token, key.
 */
export const EXTEND = `UPDATE ${TABLE} SET expires_at = ${EXPIRES}
  WHERE lease_key = ? AND token = ? AND expires_at > UTC_TIMESTAMP(3);
SELECT ROW_COUNT() AS matched, token, expires_at FROM ${TABLE} WHERE lease_key = ?`;

/**
 * raiseFence, on the pinned session, in one statement.
 * Values: floor (decimal text, CAST to UNSIGNED: text + 1 would be DOUBLE arithmetic), key, token.
 * Stores: the fence of our lease, while its ttl runs, becomes GREATEST(fence, floor + 1), so it
 * never goes down.
 * Returns an OK packet: affectedRows (matched rows: CLIENT_FOUND_ROWS) is 1 when the token still
 * holds the key, and insertId is then the fence (LAST_INSERT_ID(expr), as in ACQUIRE_FAST); 0
 * when it does not (row cleared by a force-release or deleted, taken over, or expired), and then
 * nothing changed.
 *
 * A raised fence may be far ahead of the clock; the fence order still holds:
 *  - NEXT_FENCE gives the next holder GREATEST(fence + 1, clock), larger than the raised fence
 *    whichever arm wins (until the clock catches up, it is the fence + 1 arm);
 *  - SWEEP drops a row only when nobody holds it and its fence, raised or not, is an hour
 *    behind the clock; the key then restarts from the clock, an hour past that fence. So a
 *    raised row stays until the clock has passed it by an hour (for a fence raised far into
 *    the future, until the server restarts), and no sweep lets fences go back below it.
 * What does reset the fences is a server restart (it empties the MEMORY table), which is what
 * raiseFence is there to recover from.
 */
export const RAISE_FENCE = `UPDATE ${TABLE} SET fence = LAST_INSERT_ID(GREATEST(fence, CAST(? AS UNSIGNED) + 1))
  WHERE lease_key = ? AND token = ? AND expires_at > UTC_TIMESTAMP(3)`;

/**
 * Release, on the pinned session, a prepared statement with an OK reply. A
 * pinned session holds exactly one lock, so this frees the lease's lock and
 * leaves the session clean for reuse whatever it held. The row stays: with
 * its lock free it is no longer live, and the next taker overwrites it.
 */
export const RELEASE = 'DO RELEASE_ALL_LOCKS()';

/** Clears a row whose token we saw; harmless if it changed meanwhile. Values: key, token. */
export const CLEAR_ROW = `UPDATE ${TABLE} SET token = NULL, conn_id = NULL, expires_at = NULL
  WHERE lease_key = ? AND token = ?`;

/**
 * A row is a live holder only while its ttl runs AND its recorded connection
 * still holds the GET_LOCK: a crashed or released holder's lock is free, and
 * then the key is free whatever the row says.
 */
const LIVE = `token IS NOT NULL AND expires_at > UTC_TIMESTAMP(3) AND IS_USED_LOCK(${LOCK_NAME_SQL}) = conn_id`;

export const INSPECT = `SELECT ${HOLDER_COLUMNS}, token, conn_id FROM ${TABLE} WHERE lease_key = ? AND ${LIVE}`;

// '!' as the LIKE escape: unlike '\' it means the same with NO_BACKSLASH_ESCAPES.
export const LIST = `SELECT ${HOLDER_COLUMNS} FROM ${TABLE}
  WHERE lease_key LIKE ? ESCAPE '!' AND ${LIVE} ORDER BY lease_key`;

export const LOCK_OWNER = `SELECT COALESCE(IS_USED_LOCK(?), 0) AS lock_conn`;

/**
 * Drops rows of keys nobody holds whose fence is over an hour behind the
 * clock, so the (fixed-width, capped) MEMORY table holds the keys in use
 * rather than every key ever used. The next holder of such a key starts from
 * the clock, which is then an hour past the old fence (see NEXT_FENCE); a
 * fence raised ahead of the clock keeps its row until then (see RAISE_FENCE).
 */
export const SWEEP = `DELETE FROM ${TABLE}
  WHERE fence < ${NOW_US} - 3600000000 AND NOT COALESCE(IS_USED_LOCK(${LOCK_NAME_SQL}) = conn_id, FALSE)`;

export function likePrefix(prefix: string): string {
  return prefix.replace(/[!%_]/g, (c) => `!${c}`) + '%';
}

export interface HolderRow extends HolderColumns {
  lease_key: string;
  fence: string; // BIGINT arrives as a string (bigNumberStrings); BigInt keeps it exact
  acquired_at: Date;
  expires_at: Date;
}

export const toHolder = (row: HolderRow): LeaseHolder => holderFromRow(row.lease_key, row);

