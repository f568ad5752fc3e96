import { setTimeout as sleep } from 'node:timers/promises';
import { performance } from 'node:perf_hooks';
import type { ResultSetHeader } from 'mysql2';
import { LeaseBackendUnavailableError } from '../../errors.js';
import type { LeaseHolder, LeaseStore, OwnerRecord, StoreAcquireRequest, StoreAcquireResult, StoreExtendResult } from '../../types.js';
import { PinnedSessions, QUERY_TIMEOUT_MS } from './pinned.js';
import { isBroken, Sessions, type MysqlError, type Session } from './sessions.js';
import * as sql from './sql.js';
import { copyHolder, fromFence, isExpiredHolder, isLiveHolder, type AcquireRow, type Attempt } from './rows.js';

/*
 * The exclusion is GET_LOCK, which belongs to one server session: a session
 * is taken off the free list when the lease is acquired and kept ("pinned")
 * until release. If it dies, the server frees the lock, so the lease is lost
 * and the `lost` signal of the acquire result aborts.
 *
 * GET_LOCK knows no ttl. When a contender finds the lock held but the
 * holder's row expired (the holder hung while its connection lives), it
 * KILLs that session, which frees the lock, and tries again: the ttl wins.
 *
 * Round trips (see sql.ts): an acquire is one prepared UPDATE that takes
 * the lock, rewrites the row in a MEMORY table (no log flush) and returns
 * the new fence as its insert id, or, if the key is held, the holder's
 * fence; a release is one prepared statement freeing the lock. Both are
 * answered by a bare OK packet. A second round trip (PROBE, reading the row)
 * is needed only for a holder this process does not know by its fence, an
 * expired holder, or a new key.
 */

/** How long to wait for a killed session's lock to be freed (KILL is asynchronous). */
const KILL_WAIT_MS = 2_000;
const ER_NO_SUCH_THREAD = 1094;
const ER_RECORD_FILE_FULL = 1114;
/**
 * Holders of other processes read from the table are trusted, for the same
 * fence, this long (their expiresAt may have moved since); our own leases
 * for as long as they are remembered (we know their every extend).
 */
const SEEN_TTL_MS = 1_000;
const SEEN_KEYS = 1_024;

interface Request {
  key: string;
  name: string;
  ttlMs: number;
  /** Date.now() before the first statement, for fences that are not the clock (see fromFence). */
  sentAt: number;
  /** ACQUIRE_FAST's values. */
  fast: unknown[];
  token: string;
  owner: OwnerRecord;
  /** Whether the caller wants the holder when the key is held (a bare tryAcquire does not). */
  withHolder: boolean;
}

/** The MySQL/MariaDB lease store (see above); made by createMysqlStore. */
export class MysqlStore implements LeaseStore {
  readonly kind = 'mysql';
  /**
   * The latest holder of each key seen here, by key: our own leases (kept
   * after release: a contender may still be told of one) and live holders
   * of other processes read from the table (see SEEN_TTL_MS). ACQUIRE_FAST
   * reports the holder's fence, and a fence names one holding.
   */
  readonly #seen = new Map<string, { holder: LeaseHolder; at: number }>();
  #closing: Promise<void> | undefined;

  constructor(
    private readonly sessions: Sessions,
    private readonly pinned: PinnedSessions,
    private readonly url: string,
  ) {}

  async acquire({ key, token, ttlMs, owner, withHolder }: StoreAcquireRequest): Promise<StoreAcquireResult> {
    const name = sql.lockName(key);
    const request: Request = {
      key,
      name,
      ttlMs,
      sentAt: Date.now(),
      fast: [token, owner.name, owner.pid, owner.host, ttlMs * 1000, key, name],
      token,
      owner,
      withHolder,
    };
    let session = this.sessions.idle() ?? (await this.#connect());
    let result: Attempt;
    try {
      result = await this.#try(session, request).catch(async (err: unknown) => {
        if (!isBroken(err)) throw err;
        // An idle session may have died unnoticed: one retry on a new one.
        this.sessions.destroy(session);
        session = await this.#connect();
        return this.#try(session, request);
      });
      if (!result.got && result.row && isExpiredHolder(result.row)) result = await this.#evict(session, request, result.row);
    } catch (err) {
      this.sessions.destroy(session); // also frees a GET_LOCK the failed statements may have taken
      throw err;
    }
    if (!result.got) {
      this.sessions.give(session);
      return { acquired: false, holder: result.holder && copyHolder(result.holder) };
    }
    const { fence, acquiredAt, expiresAt } = result;
    const lease: LeaseHolder = { key, owner: { ...owner, acquiredAt }, fence, expiresAt };
    this.#remember(lease, Infinity);
    const lost = this.pinned.pin(session, token, lease);
    return { acquired: true, fence, acquiredAt, expiresAt, lost };
  }

  /**
   * One attempt on a session holding no lock: ACQUIRE_FAST, one round trip,
   * whether the key is free or held by a live holder that is known here by
   * its fence or not asked for. PROBE (and for a new key ACQUIRE_NEW) only
   * when that cannot tell, and always for a holder whose ttl ran out, which
   * may have to be evicted.
   */
  async #try(session: Session, request: Request): Promise<Attempt> {
    const { key, name } = request;
    const header = await session.run<ResultSetHeader>(sql.ACQUIRE_FAST, request.fast, QUERY_TIMEOUT_MS, true);
    if (header.affectedRows === 1) return fromFence(header.insertId, request.ttlMs, request.sentAt);
    if (header.insertId) {
      // Held by a live holder, whose fence this is.
      const fence = BigInt(header.insertId);
      const seen = this.#seen.get(key);
      if (seen && seen.holder.fence === fence && performance.now() < seen.at + SEEN_TTL_MS) return { got: false, holder: seen.holder };
      if (!request.withHolder) return { got: false, holder: null };
    }
    const [row] = await session.run<AcquireRow[]>(sql.PROBE, [name, key], QUERY_TIMEOUT_MS, true);
    if (!row) return this.#acquireNew(session, request);
    if (Number(row.lock_conn) === 0) {
      // Freed since: take it the one way that writes the row with the lock.
      const again = await session.run<ResultSetHeader>(sql.ACQUIRE_FAST, request.fast, QUERY_TIMEOUT_MS, true);
      if (again.affectedRows === 1) return fromFence(again.insertId, request.ttlMs, request.sentAt);
    }
    return this.#refused(key, row);
  }

  /** The key has no row: insert it with the lock, or report who holds the lock. */
  async #acquireNew(session: Session, request: Request): Promise<Attempt> {
    const { key, name, token, owner, ttlMs } = request;
    const row = [token, owner.name, owner.pid, owner.host, ttlMs * 1000];
    const values = [key, ...row, name, ...row, name, key];
    const attempt = async (): Promise<Attempt> => {
      const [inserted, rows] = await session.run<[ResultSetHeader, AcquireRow[]]>(sql.ACQUIRE_NEW, values, QUERY_TIMEOUT_MS);
      const found = rows[0];
      if (inserted.affectedRows > 0 && found) {
        return { got: true, fence: BigInt(found.fence), acquiredAt: found.acquired_at, expiresAt: found.expires_at };
      }
      return found ? this.#refused(key, found) : { got: false, holder: null };
    };
    return attempt().catch(async (err: MysqlError) => {
      if (err.errno !== ER_RECORD_FILE_FULL) throw err;
      // The capped MEMORY table is full: drop rows of keys long unused, once.
      await session.run(sql.RELEASE, [], QUERY_TIMEOUT_MS); // the failed statement may have taken the lock
      await session.run(sql.SWEEP, [], QUERY_TIMEOUT_MS);
      return attempt();
    });
  }

  /** A failed attempt that read the row: who holds the key, remembered by its fence for a while. */
  #refused(key: string, row: AcquireRow): Attempt {
    if (!isLiveHolder(row)) return { got: false, holder: null, row };
    const holder = sql.toHolder(row);
    this.#remember(holder, performance.now());
    return { got: false, holder, row };
  }

  /** `at`: when it was read (Infinity for our own leases, which never go stale). */
  #remember(holder: LeaseHolder, at: number): void {
    if (this.#seen.size >= SEEN_KEYS && !this.#seen.has(holder.key)) this.#seen.delete(this.#seen.keys().next().value!);
    this.#seen.set(holder.key, { holder, at });
  }

  /** The holder's ttl ran out but its session lives (it hung): KILL the session, then try again. */
  async #evict(session: Session, request: Request, row: AcquireRow): Promise<Attempt> {
    const victim = Number(row.conn_id);
    this.pinned.loseSession(victim, new Error('its ttl ran out and another contender evicted it'));
    // A hung holder we may not evict is still the holder.
    if (!(await this.#kill(session, victim))) return { got: false, holder: sql.toHolder(row), row };
    // Retry until the killed session's lock is gone and someone (maybe us) took it.
    const deadline = Date.now() + KILL_WAIT_MS;
    let result: Attempt;
    do {
      await sleep(5);
      result = await this.#try(session, request);
      // Go on while the row shows the lock still the victim's (or free again).
    } while (!result.got && result.row && [0, victim].includes(Number(result.row.lock_conn)) && Date.now() < deadline);
    return result;
  }

  async extend(key: string, token: string, ttlMs: number): Promise<StoreExtendResult> {
    const session = this.pinned.find(key, token);
    if (!session) return { extended: false, reason: 'lost' };
    type Row = { matched: string | number; token: string | null; expires_at: Date };
    let row: Row | undefined;
    try {
      // A renewal that outlasts the ttl is useless: the lease lapsed meanwhile.
      const timeout = Math.max(ttlMs, 1_000);
      const [, rows] = await session.run<[ResultSetHeader, Row[]]>(sql.EXTEND, [ttlMs * 1000, key, token, key], timeout);
      row = rows[0];
    } catch (err) {
      if (!isBroken(err) && this.pinned.holds(session, token)) throw err;
      this.pinned.lose(session, new Error('connection to mysql lost', { cause: err }));
      return { extended: false, reason: 'lost' };
    }
    if (row && Number(row.matched) > 0) {
      if (session.lease) session.lease.expiresAt = row.expires_at;
      return { extended: true, expiresAt: row.expires_at };
    }
    if (row?.token === token) return { extended: false, reason: 'expired' };
    // Row cleared or taken over while our session lives (a force-release
    // that could not KILL us): drop the session, which gives the lock up so
    // the key is not stuck, and aborts `lost`.
    this.pinned.lose(session, new Error('the lease was force-released'));
    return { extended: false, reason: 'lost' };
  }

  /**
   * RAISE_FENCE on the pinned session, in one round trip. A lease of ours
   * whose row no longer carries its token while it lives (expired, or cleared
   * by a force-release that could not KILL us) is lost: the session is
   * dropped, which frees the lock so the key is not stuck, and `lost` aborts.
   */
  async raiseFence(key: string, token: string, floor: bigint): Promise<bigint | null> {
    const session = this.pinned.find(key, token);
    if (!session) return null;
    let header: ResultSetHeader;
    try {
      header = await session.run<ResultSetHeader>(sql.RAISE_FENCE, [floor.toString(), key, token], QUERY_TIMEOUT_MS);
    } catch (err) {
      if (!isBroken(err) && this.pinned.holds(session, token)) throw err;
      this.pinned.lose(session, new Error('connection to mysql lost', { cause: err }));
      return null;
    }
    if (header.affectedRows === 0) {
      this.pinned.lose(session, new Error('the lease expired or was force-released'));
      return null;
    }
    const fence = BigInt(header.insertId);
    // Contenders are told of this holder by its fence (ACQUIRE_FAST reports it; see #seen).
    if (session.lease) session.lease.fence = fence;
    return fence;
  }

  /**
   * Frees the lock on the pinned session, in one round trip. The lease was
   * ours up to here if the session still held the lock, which a live pinned
   * session does: the server frees it only on release or when the session
   * ends, and a session that ended (KILLed by an evicting contender, say)
   * fails this statement, or was unpinned when its end was noticed.
   */
  async release(key: string, token: string): Promise<boolean> {
    const session = this.pinned.find(key, token);
    // Not pinned: never ours, already released, or its session died and
    // took the lock with it.
    if (!session) return false;
    this.pinned.unpin(session);
    try {
      await session.run(sql.RELEASE, [], QUERY_TIMEOUT_MS, true);
    } catch (err) {
      this.sessions.destroy(session);
      if (isBroken(err)) return false;
      throw err;
    }
    this.sessions.give(session);
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
    this.pinned.loseSession(victim, new Error('the lease was force-released'));
    // Free the GET_LOCK too, and wait for it, so the key can be taken at
    // once. If KILL is refused, the holder finds its row gone at its next
    // heartbeat and gives the lock up then.
    const session = this.sessions.idle() ?? (await this.#connect());
    try {
      if (await this.#kill(session, victim)) {
        const name = sql.lockName(key);
        const deadline = Date.now() + KILL_WAIT_MS;
        while (Date.now() < deadline) {
          const [owner] = await session.run<{ lock_conn: string | number }[]>(sql.LOCK_OWNER, [name], QUERY_TIMEOUT_MS);
          if (Number(owner?.lock_conn) !== victim) break;
          await sleep(5);
        }
      }
      this.sessions.give(session);
    } catch {
      this.sessions.destroy(session); // the row is cleared either way
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
      const reason = new Error('the lease store was closed');
      await Promise.allSettled(
        this.pinned.all().map(async (session) => {
          const lost = session.leaseLost;
          this.pinned.unpin(session);
          await session.run(sql.RELEASE, [], QUERY_TIMEOUT_MS, true).catch(() => {});
          this.sessions.end(session, reason);
          lost?.abort(reason);
        }),
      );
      this.sessions.close();
    })();
    return this.#closing;
  }

  async #connect(): Promise<Session> {
    try {
      return await this.sessions.connect();
    } catch (err) {
      throw new LeaseBackendUnavailableError('mysql', this.url, err);
    }
  }

  /** A statement on a borrowed (unpinned) session, retried once on a new one if the session had died. */
  async #run<T>(text: string, values: unknown[]): Promise<T> {
    let session = this.sessions.idle() ?? (await this.#connect());
    for (let attempt = 0; ; attempt++) {
      try {
        const result = await session.run<T>(text, values, QUERY_TIMEOUT_MS);
        this.sessions.give(session);
        return result;
      } catch (err) {
        if (!isBroken(err)) {
          this.sessions.give(session);
          throw err;
        }
        this.sessions.destroy(session);
        if (attempt > 0) throw err;
        session = await this.#connect();
      }
    }
  }

  /** KILLs a session; true if it is gone (or already was), false if refused. */
  async #kill(session: Session, threadId: number): Promise<boolean> {
    try {
      await session.run('KILL CONNECTION ?', [threadId], QUERY_TIMEOUT_MS);
      return true;
    } catch (err) {
      if (isBroken(err)) throw err;
      return (err as MysqlError).errno === ER_NO_SUCH_THREAD;
    }
  }
}
