import { setTimeout as sleep } from 'node:timers/promises';
import type { Connection, ResultSetHeader } from 'mysql2';
import { LeaseBackendUnavailableError } from '../errors.js';
import type { LeaseHolder, LeaseStore, OwnerRecord, StoreAcquireResult, StoreExtendResult } from '../types.js';
import { redactUrl } from '../../util/redact.js';
import { PINNED_QUERY_TIMEOUT_MS, PinnedSessions } from './mysql/pinned.js';
import { execute, isBroken, query, Sessions, type MysqlError } from './mysql/sessions.js';
import * as sql from './mysql/sql.js';
import { parseMysqlUrl } from './mysql/url.js';

/*
 * The exclusion is GET_LOCK, which belongs to one server session: the
 * session is taken off the free list when the lease is acquired and kept
 * ("pinned") until release. If it dies, the server frees the lock, so the
 * lease is lost and the `lost` signal of the acquire result aborts.
 *
 * GET_LOCK knows no ttl. When a contender finds the lock held but the
 * holder's row expired (the holder hung while its connection lives), it
 * KILLs that session, which frees the lock, and tries again: the ttl wins.
 *
 * An uncontended acquire + release costs two round trips, each a prepared
 * statement answered by an OK packet: the acquire UPDATE takes the lock and
 * rewrites the row (MEMORY table, no log flush) and returns the new fence as
 * its insert id; the release frees the lock. See sql.ts.
 */

/** How long to wait for a killed session's lock to be freed (KILL is asynchronous). */
const KILL_WAIT_MS = 2_000;
const ER_NO_SUCH_THREAD = 1094;
const ER_RECORD_FILE_FULL = 1114;

interface AcquireRow extends sql.HolderRow {
  lock_conn: string | number;
  token: string | null;
  conn_id: string | null;
  unexpired: number | null;
}

interface Attempt {
  got: boolean;
  row: AcquireRow;
}

/**
 * Connects to MySQL or MariaDB at `url` (`mysql://user[:pass]@host:port/db`
 * or `mariadb://…`), creates the `forgesync_leases` table if it is missing
 * (moving one of an earlier version to ENGINE=MEMORY), and returns a lease
 * store whose exclusion is `GET_LOCK` held on a connection pinned to each
 * lease (one server connection per held lease).
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
  const sessions = new Sessions({
    ...parseMysqlUrl(url),
    multipleStatements: true, // one round trip for the slow paths; values stay placeholders
    supportBigNumbers: true,
    bigNumberStrings: true,
    timezone: 'Z', // DATETIME columns hold UTC_TIMESTAMP values
    connectTimeout: 5_000,
    enableKeepAlive: true,
    keepAliveInitialDelay: 10_000,
  });
  try {
    await ensureTable(sessions);
  } catch (cause) {
    sessions.close();
    throw new LeaseBackendUnavailableError('mysql', redactUrl(url), cause);
  }
  return new MysqlStore(sessions, redactUrl(url));
}

/**
 * Creates the table, or moves an earlier version's InnoDB table to MEMORY,
 * and drops rows of keys long unused. A user without CREATE or ALTER can use
 * a table made by an admin: only the final probe must succeed.
 */
async function ensureTable(sessions: Sessions): Promise<void> {
  const conn = await sessions.connect();
  try {
    const [status] = await query<{ engine: string | null; max_bytes: string | number | null }[]>(conn, sql.TABLE_STATUS);
    await query(conn, sql.SET_TABLE_CAP);
    if (!status) {
      // Several processes may start together; IF NOT EXISTS makes that safe.
      await query(conn, sql.CREATE_TABLE);
    } else if (status.engine?.toUpperCase() !== 'MEMORY' || Number(status.max_bytes) < sql.MAX_TABLE_BYTES * 0.9) {
      // Best effort: the store works on any engine, only slower, and with
      // the server's default cap the table just holds fewer keys.
      await query(conn, sql.TO_MEMORY).catch(() => {});
    }
    await query(conn, sql.SWEEP).catch(() => {});
    await query(conn, `SELECT 1 FROM ${sql.TABLE} LIMIT 0`);
    sessions.end(conn); // its max_heap_table_size is not for lease work
  } catch (err) {
    sessions.destroy(conn);
    throw err;
  }
}

class MysqlStore implements LeaseStore {
  readonly kind = 'mysql';
  readonly #pinned: PinnedSessions;
  #closing: Promise<void> | undefined;

  constructor(
    private readonly sessions: Sessions,
    private readonly url: string,
  ) {
    this.#pinned = new PinnedSessions(sessions);
  }

  async acquire(key: string, token: string, ttlMs: number, owner: OwnerRecord): Promise<StoreAcquireResult> {
    const name = sql.lockName(key);
    const values = [token, owner.name, owner.pid, owner.host, ttlMs * 1000, key, name];
    let conn = this.sessions.idle() ?? (await this.#connect());
    let header: ResultSetHeader;
    try {
      header = await execute(conn, sql.ACQUIRE_FAST, values, PINNED_QUERY_TIMEOUT_MS);
    } catch (err) {
      this.sessions.destroy(conn); // also frees a GET_LOCK the statement may have taken
      if (!isBroken(err)) throw err;
      // An idle session may have died unnoticed: one retry on a new one.
      conn = await this.#connect();
      try {
        header = await execute(conn, sql.ACQUIRE_FAST, values, PINNED_QUERY_TIMEOUT_MS);
      } catch (retryErr) {
        this.sessions.destroy(conn);
        throw retryErr;
      }
    }
    if (header.affectedRows !== 1) return this.#acquireSlow(conn, key, name, token, ttlMs, owner);
    // The UPDATE's insert id is the new fence, whose clock part is the
    // server's UTC_TIMESTAMP(6) of the acquire: acquired_at and expires_at of
    // the row, to the millisecond, with no result set to fetch. (Only after a
    // server clock step back does the fence run ahead of the clock, and these
    // two with it, by at most that step; the lease's own deadline is measured
    // on this machine's monotonic clock either way.)
    const fence = BigInt(header.insertId);
    const acquiredAt = new Date(Number(fence / 1000n));
    return this.#pin(conn, key, token, fence, acquiredAt, new Date(acquiredAt.getTime() + ttlMs));
  }

  /** The key has no row yet, or its lock is held: insert or take over, or report the holder (and maybe evict it). */
  async #acquireSlow(
    conn: Connection,
    key: string,
    name: string,
    token: string,
    ttlMs: number,
    owner: OwnerRecord,
  ): Promise<StoreAcquireResult> {
    const row = [token, owner.name, owner.pid, owner.host, ttlMs * 1000];
    const values = [key, ...row, name, ...row, name, key];
    const attempt = async (): Promise<Attempt> => {
      const [inserted, rows] = await query<[ResultSetHeader, AcquireRow[]]>(conn, sql.ACQUIRE_SLOW, values, PINNED_QUERY_TIMEOUT_MS);
      return { got: inserted.affectedRows > 0, row: rows[0]! };
    };
    let result: Attempt;
    try {
      result = await attempt().catch(async (err: MysqlError) => {
        if (err.errno !== ER_RECORD_FILE_FULL) throw err;
        // The capped MEMORY table is full: drop rows of keys long unused, once.
        await query(conn, sql.RELEASE); // the failed statement may have taken the lock
        await query(conn, sql.SWEEP);
        return attempt();
      });
      if (!result.got && isExpiredHolder(result.row)) {
        const victim = Number(result.row.conn_id);
        this.#pinned.loseSession(victim, new Error('its ttl ran out and another contender evicted it'));
        if (!(await this.#kill(conn, victim))) {
          this.sessions.give(conn);
          return { acquired: false, holder: sql.toHolder(result.row) }; // a hung holder we may not evict
        }
        // Retry until the killed session's lock is gone and someone (maybe us) took it.
        const deadline = Date.now() + KILL_WAIT_MS;
        do {
          await sleep(5);
          result = await attempt();
        } while (!result.got && [0, victim].includes(Number(result.row.lock_conn)) && Date.now() < deadline);
      }
    } catch (err) {
      this.sessions.destroy(conn); // also frees a GET_LOCK the failed statements may have taken
      throw err;
    }
    if (!result.got) {
      this.sessions.give(conn);
      return { acquired: false, holder: isLiveHolder(result.row) ? sql.toHolder(result.row) : null };
    }
    const { fence, acquired_at, expires_at } = result.row;
    return this.#pin(conn, key, token, BigInt(fence), acquired_at, expires_at);
  }

  #pin(conn: Connection, key: string, token: string, fence: bigint, acquiredAt: Date, expiresAt: Date): StoreAcquireResult {
    const pinned = this.#pinned.pin(conn, key, token);
    return { acquired: true, fence, acquiredAt, expiresAt, lost: pinned.controller.signal };
  }

  async extend(key: string, token: string, ttlMs: number): Promise<StoreExtendResult> {
    const pinned = this.#pinned.get(key, token);
    if (!pinned) return { extended: false, reason: 'lost' };
    type Row = { matched: string | number; token: string | null; expires_at: Date };
    let row: Row | undefined;
    try {
      // A renewal that outlasts the ttl is useless: the lease lapsed meanwhile.
      const timeout = Math.max(ttlMs, 1_000);
      const [, rows] = await query<[ResultSetHeader, Row[]]>(pinned.conn, sql.EXTEND, [ttlMs * 1000, key, token, key], timeout);
      row = rows[0];
    } catch (err) {
      if (!isBroken(err) && this.#pinned.isPinned(pinned)) throw err;
      this.#pinned.lose(pinned, new Error('connection to mysql lost', { cause: err }));
      return { extended: false, reason: 'lost' };
    }
    if (row && Number(row.matched) > 0) return { extended: true, expiresAt: row.expires_at };
    if (row?.token === token) return { extended: false, reason: 'expired' };
    // Row cleared or taken over while our session lives (a force-release
    // that could not KILL us): give the lock up so the key is not stuck.
    await this.#pinned.free(pinned);
    pinned.controller.abort(new Error('the lease was force-released'));
    return { extended: false, reason: 'lost' };
  }

  /**
   * Frees the lock on the pinned session, in one round trip. The lease was
   * ours up to here if the session still held the lock, which a live pinned
   * session does: the server frees it only on release or when the session
   * ends, and a session that ended (KILLed by an evicting contender, say)
   * fails this statement, or was unpinned already when its end was noticed.
   */
  async release(key: string, token: string): Promise<boolean> {
    const pinned = this.#pinned.get(key, token);
    // Not pinned: never ours, already released, or its session died and
    // took the lock with it.
    if (!pinned) return false;
    this.#pinned.unpin(pinned);
    try {
      await execute(pinned.conn, sql.RELEASE, [], PINNED_QUERY_TIMEOUT_MS);
    } catch (err) {
      this.sessions.destroy(pinned.conn);
      if (isBroken(err)) return false;
      throw err;
    }
    this.sessions.give(pinned.conn);
    return true;
  }

  async inspect(key: string): Promise<LeaseHolder | null> {
    const rows = await this.#run<sql.HolderRow[]>(sql.INSPECT, [key]);
    return rows[0] ? sql.toHolder(rows[0]) : null;
  }

  async list(prefix: string): Promise<LeaseHolder[]> {
    return (await this.#run<sql.HolderRow[]>(sql.LIST, [sql.likePrefix(prefix)])).map(sql.toHolder);
  }

  async forceRelease(key: string, fence?: bigint): Promise<boolean> {
    const [row] = await this.#run<(sql.HolderRow & { token: string; conn_id: string })[]>(sql.INSPECT, [key]);
    if (!row || (fence !== undefined && BigInt(row.fence) !== fence)) return false;
    // Compare-and-clear on the token we saw: a newer holder is left alone.
    const cleared = await this.#run<ResultSetHeader>(sql.CLEAR_ROW, [key, row.token]);
    if (cleared.affectedRows === 0) return false;
    const victim = Number(row.conn_id);
    this.#pinned.loseSession(victim, new Error('the lease was force-released'));
    // Free the GET_LOCK too, and wait for it, so the key can be taken at
    // once. If KILL is refused, the holder finds its row gone at its next
    // heartbeat and gives the lock up then.
    const conn = this.sessions.idle() ?? (await this.#connect());
    try {
      if (await this.#kill(conn, victim)) {
        const name = sql.lockName(key);
        const deadline = Date.now() + KILL_WAIT_MS;
        while (Date.now() < deadline) {
          const [owner] = await query<{ lock_conn: string | number }[]>(conn, sql.LOCK_OWNER, [name]);
          if (Number(owner?.lock_conn) !== victim) break;
          await sleep(5);
        }
      }
      this.sessions.give(conn);
    } catch {
      this.sessions.destroy(conn); // the row is cleared either way
    }
    return true;
  }

  async ping(): Promise<void> {
    try {
      await this.#run('SELECT 1', []);
    } catch (err) {
      throw new LeaseBackendUnavailableError('mysql', this.url, err);
    }
  }

  /** Idempotent. Leases still held are released and their `lost` signals aborted. */
  close(): Promise<void> {
    this.#closing ??= (async () => {
      await Promise.allSettled(
        this.#pinned.all().map(async (pinned) => {
          await this.#pinned.free(pinned);
          pinned.controller.abort(new Error('the lease store was closed'));
        }),
      );
      this.sessions.close();
    })();
    return this.#closing;
  }

  async #connect(): Promise<Connection> {
    try {
      return await this.sessions.connect();
    } catch (err) {
      throw new LeaseBackendUnavailableError('mysql', this.url, err);
    }
  }

  /** A query on a borrowed (unpinned) session, retried once on a new one if the session had died. */
  async #run<T>(text: string, values: unknown[]): Promise<T> {
    let conn = this.sessions.idle() ?? (await this.#connect());
    for (let attempt = 0; ; attempt++) {
      try {
        const result = await query<T>(conn, text, values);
        this.sessions.give(conn);
        return result;
      } catch (err) {
        if (!isBroken(err)) {
          this.sessions.give(conn);
          throw err;
        }
        this.sessions.destroy(conn);
        if (attempt > 0) throw err;
        conn = await this.#connect();
      }
    }
  }

  /** KILLs a session; true if it is gone (or already was), false if refused. */
  async #kill(conn: Connection, threadId: number): Promise<boolean> {
    try {
      await query(conn, 'KILL CONNECTION ?', [threadId]);
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
