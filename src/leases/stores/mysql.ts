import { setTimeout as sleep } from 'node:timers/promises';
import mysql, { type Pool, type PoolConnection, type ResultSetHeader, type RowDataPacket } from 'mysql2/promise';
import { LeaseBackendUnavailableError } from '../errors.js';
import type { LeaseHolder, LeaseStore, OwnerRecord, StoreAcquireResult, StoreExtendResult } from '../types.js';
import { redactUrl } from '../../util/redact.js';
import { isBroken, lastRows, PINNED_QUERY_TIMEOUT_MS, PinnedSessions, type MysqlError } from './mysql/pinned.js';
import * as sql from './mysql/sql.js';
import { parseMysqlUrl } from './mysql/url.js';

/*
 * The exclusion is GET_LOCK, which belongs to one server session: the
 * connection is taken out of the pool when the lease is acquired and kept
 * ("pinned") until release. If it dies, the server frees the lock, so the
 * lease is lost and the `lost` signal of the acquire result aborts.
 *
 * GET_LOCK knows no ttl. When a contender finds the lock held but the
 * holder's row expired (the holder hung while its connection lives), it
 * KILLs that session, which frees the lock, and tries again: the ttl wins.
 */

/** How long to wait for a killed session's lock to be freed (KILL is asynchronous). */
const KILL_WAIT_MS = 2_000;
const ER_NO_SUCH_TABLE = 1146;
const ER_TABLE_EXISTS = 1050;
const ER_NO_SUCH_THREAD = 1094;

interface AcquireRow extends sql.HolderRow {
  got: string | number | null;
  lock_conn: string | number;
  token: string | null;
  conn_id: string | null;
  unexpired: number | null;
}

/**
 * Connects to MySQL or MariaDB at `url` (`mysql://user[:pass]@host:port/db`
 * or `mariadb://…`), creates the `forgesync_leases` table if it is missing,
 * and returns a lease store whose exclusion is `GET_LOCK` held on a
 * connection pinned to each lease (one server connection per held lease).
 *
 * Needs a direct connection to the server, not a proxy that multiplexes
 * sessions. Evicting a hung holder whose ttl ran out uses KILL, which works
 * without privileges when all processes share one database user.
 *
 * @throws LeaseBackendUnavailableError within about five seconds when the
 *   server is unreachable, refuses the credentials, lacks the database, or
 *   the table cannot be created; the URL in the message has its password redacted.
 * @throws UnsupportedLeaseUrlError for another scheme or a URL without database.
 */
export async function createMysqlStore(url: string): Promise<LeaseStore> {
  const pool = mysql.createPool({
    ...parseMysqlUrl(url),
    multipleStatements: true, // one round trip per hot operation; values stay placeholders
    supportBigNumbers: true,
    bigNumberStrings: true,
    timezone: 'Z', // DATETIME columns hold UTC_TIMESTAMP values
    connectTimeout: 5_000,
    enableKeepAlive: true,
    keepAliveInitialDelay: 10_000,
    // Every held lease occupies a connection, so the limit is high and only
    // a few idle ones are kept. Past the limit fail rather than queue forever.
    connectionLimit: 1_000,
    maxIdle: 8,
    idleTimeout: 30_000,
    waitForConnections: false,
  });
  // A dying connection (server restart, KILL, network loss) must never crash
  // the process; pinned connections get their own listeners on top of this.
  pool.pool.on('connection', (conn) => conn.on('error', () => {}));
  try {
    await ensureTable(pool);
  } catch (cause) {
    await pool.end().catch(() => {});
    throw new LeaseBackendUnavailableError('mysql', redactUrl(url), cause);
  }
  return new MysqlStore(pool, redactUrl(url));
}

/** Probes first so a user without CREATE can use a table made by an admin. */
async function ensureTable(pool: Pool): Promise<void> {
  try {
    await pool.query(sql.PROBE_TABLE);
  } catch (err) {
    if ((err as MysqlError).errno !== ER_NO_SUCH_TABLE) throw err;
    // Several processes may start together; IF NOT EXISTS makes that safe.
    await pool.query(sql.CREATE_TABLE).catch((e: MysqlError) => {
      if (e.errno !== ER_TABLE_EXISTS) throw e;
    });
  }
}

class MysqlStore implements LeaseStore {
  readonly kind = 'mysql';
  readonly #pinned = new PinnedSessions();
  #closing: Promise<void> | undefined;

  constructor(
    private readonly pool: Pool,
    private readonly url: string,
  ) {}

  async acquire(key: string, token: string, ttlMs: number, owner: OwnerRecord): Promise<StoreAcquireResult> {
    const name = sql.lockName(key);
    const row = [key, token, owner.name, owner.pid, owner.host, ttlMs * 1000];
    const values = [name, 0, ...row, ...row.slice(1), name, key];
    const attempt = async (conn: PoolConnection) => {
      const [results] = await conn.query({ sql: sql.ACQUIRE, timeout: PINNED_QUERY_TIMEOUT_MS }, values);
      return lastRows<AcquireRow>(results)[0]!;
    };
    let conn = await this.#connection();
    let result: AcquireRow;
    try {
      // A pooled idle connection may have died unnoticed: one retry on a fresh one.
      result = await attempt(conn).catch(async (err: unknown) => {
        if (!isBroken(err)) throw err;
        conn.destroy();
        conn = await this.#connection();
        return attempt(conn);
      });
      if (Number(result.got) !== 1 && isExpiredHolder(result)) {
        const victim = Number(result.conn_id);
        this.#pinned.loseSession(victim, new Error('its ttl ran out and another contender evicted it'));
        if (!(await this.#kill(conn, victim))) {
          conn.release();
          return { acquired: false, holder: sql.toHolder(result) }; // a hung holder we may not evict
        }
        // Retry until the killed session's lock is gone and someone (maybe us) took it.
        const deadline = Date.now() + KILL_WAIT_MS;
        do {
          await sleep(5);
          result = await attempt(conn);
        } while (Number(result.got) !== 1 && [0, victim].includes(Number(result.lock_conn)) && Date.now() < deadline);
      }
    } catch (err) {
      conn.destroy(); // also frees a GET_LOCK the failed statements may have taken
      throw err;
    }
    if (Number(result.got) !== 1) {
      conn.release();
      return { acquired: false, holder: isLiveHolder(result) ? sql.toHolder(result) : null };
    }
    const pinned = this.#pinned.pin(conn, key, token);
    return {
      acquired: true,
      fence: BigInt(result.fence),
      acquiredAt: result.acquired_at,
      expiresAt: result.expires_at,
      lost: pinned.controller.signal,
    };
  }

  async extend(key: string, token: string, ttlMs: number): Promise<StoreExtendResult> {
    const pinned = this.#pinned.get(key, token);
    if (!pinned) return { extended: false, reason: 'lost' };
    type Row = { matched: string | number; token: string | null; expires_at: Date };
    let row: Row | undefined;
    try {
      // A renewal that outlasts the ttl is useless: the lease lapsed meanwhile.
      const timeout = Math.max(ttlMs, 1_000);
      const [results] = await pinned.conn.query({ sql: sql.EXTEND, timeout }, [ttlMs * 1000, key, token, key]);
      row = lastRows<Row>(results)[0];
    } catch (err) {
      if (!isBroken(err) && this.#pinned.isPinned(pinned)) throw err;
      this.#pinned.lose(pinned, new Error('connection to mysql lost', { cause: err }));
      return { extended: false, reason: 'lost' };
    }
    if (row && Number(row.matched) > 0) return { extended: true, expiresAt: row.expires_at };
    if (row?.token === token) return { extended: false, reason: 'expired' };
    // Row cleared or taken over while our session lives (a force-release
    // that could not KILL us): give the lock up so the key is not stuck.
    await this.#pinned.free(pinned, false);
    pinned.controller.abort(new Error('the lease was force-released'));
    return { extended: false, reason: 'lost' };
  }

  async release(key: string, token: string): Promise<boolean> {
    const pinned = this.#pinned.get(key, token);
    // Not pinned: never ours, already released, or its session died and
    // took the lock with it.
    if (!pinned) return false;
    this.#pinned.unpin(pinned);
    try {
      const [results] = await pinned.conn.query({ sql: sql.RELEASE, timeout: PINNED_QUERY_TIMEOUT_MS }, [
        key,
        token,
        sql.lockName(key),
      ]);
      const row = lastRows<{ cleared: string | number; freed: string | number | null }>(results)[0];
      if (Number(row?.freed) === 1) pinned.conn.release();
      else pinned.conn.destroy(); // unexpected; never pool a session that may still hold a lock
      return Number(row?.cleared) > 0;
    } catch (err) {
      pinned.conn.destroy();
      if (isBroken(err)) return false;
      throw err;
    }
  }

  async inspect(key: string): Promise<LeaseHolder | null> {
    const rows = await this.#query<sql.HolderRow>(sql.INSPECT, [key]);
    return rows[0] ? sql.toHolder(rows[0]) : null;
  }

  async list(prefix: string): Promise<LeaseHolder[]> {
    return (await this.#query<sql.HolderRow>(sql.LIST, [sql.likePrefix(prefix)])).map(sql.toHolder);
  }

  async forceRelease(key: string, fence?: bigint): Promise<boolean> {
    const [row] = await this.#query<sql.HolderRow & { token: string; conn_id: string }>(sql.INSPECT, [key]);
    if (!row || (fence !== undefined && BigInt(row.fence) !== fence)) return false;
    // Compare-and-clear on the token we saw: a newer holder is left alone.
    const [cleared] = await this.pool.query<ResultSetHeader>(sql.CLEAR_ROW, [key, row.token]);
    if (cleared.affectedRows === 0) return false;
    const victim = Number(row.conn_id);
    this.#pinned.loseSession(victim, new Error('the lease was force-released'));
    // Free the GET_LOCK too, and wait for it, so the key can be taken at
    // once. If KILL is refused, the holder finds its row gone at its next
    // heartbeat and gives the lock up then.
    const conn = await this.#connection();
    try {
      if (await this.#kill(conn, victim)) {
        const deadline = Date.now() + KILL_WAIT_MS;
        while (Date.now() < deadline) {
          const [owner] = await conn.query<RowDataPacket[]>(sql.LOCK_OWNER, [sql.lockName(key)]);
          if (Number(owner[0]?.lock_conn) !== victim) break;
          await sleep(5);
        }
      }
      conn.release();
    } catch {
      conn.destroy(); // the row is cleared either way
    }
    return true;
  }

  async ping(): Promise<void> {
    try {
      await this.pool.query('SELECT 1');
    } catch (err) {
      throw new LeaseBackendUnavailableError('mysql', this.url, err);
    }
  }

  /** Idempotent. Leases still held are released and their `lost` signals aborted. */
  close(): Promise<void> {
    this.#closing ??= (async () => {
      await Promise.allSettled(
        this.#pinned.all().map(async (pinned) => {
          await this.#pinned.free(pinned, true);
          pinned.controller.abort(new Error('the lease store was closed'));
        }),
      );
      await this.pool.end().catch(() => {});
    })();
    return this.#closing;
  }

  async #connection(): Promise<PoolConnection> {
    try {
      return await this.pool.getConnection();
    } catch (err) {
      throw new LeaseBackendUnavailableError('mysql', this.url, err);
    }
  }

  /** A plain (unpinned) query, retried once if a pooled connection had died. */
  async #query<T>(text: string, values: unknown[]): Promise<T[]> {
    for (let attempt = 0; ; attempt++) {
      try {
        const [rows] = await this.pool.query(text, values);
        return rows as T[];
      } catch (err) {
        if (!isBroken(err) || attempt > 0) throw err;
      }
    }
  }

  /** KILLs a session; true if it is gone (or already was), false if refused. */
  async #kill(conn: PoolConnection, threadId: number): Promise<boolean> {
    try {
      await conn.query('KILL CONNECTION ?', [threadId]);
      return true;
    } catch (err) {
      if (isBroken(err)) throw err;
      return (err as MysqlError).errno === ER_NO_SUCH_THREAD;
    }
  }
}

/** The lock is held by the session the row names, and the row is live. */
function isLiveHolder(row: AcquireRow): boolean {
  return row.token !== null && Number(row.unexpired) === 1 && ownsLock(row);
}

/** The lock is held by the session the row names, but the row's ttl ran out. */
function isExpiredHolder(row: AcquireRow): boolean {
  return row.token !== null && Number(row.unexpired) !== 1 && ownsLock(row);
}

function ownsLock(row: AcquireRow): boolean {
  return row.conn_id !== null && Number(row.lock_conn) !== 0 && String(row.lock_conn) === String(row.conn_id);
}
