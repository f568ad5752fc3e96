import type { EventEmitter } from 'node:events';
import type { PoolConnection } from 'mysql2/promise';
import * as sql from './sql.js';

/** A held lease and the pool connection pinned to it (the one holding its GET_LOCK). */
export interface Pinned {
  key: string;
  token: string;
  conn: PoolConnection;
  /** Server session id (CONNECTION_ID()), as recorded in the row's conn_id. */
  threadId: number;
  controller: AbortController;
  detach: () => void;
}

export type MysqlError = Error & { errno?: number; code?: string; fatal?: boolean };
type CoreConnection = EventEmitter & { threadId: number };

/** Bound on queries over a pinned session, so a silently dead network cannot hang a release. */
export const PINNED_QUERY_TIMEOUT_MS = 10_000;

/**
 * The session is unusable: fatal protocol/network error, or a query timeout
 * (after which mysql2 leaves the session in an unknown state, so we drop it).
 */
export function isBroken(err: unknown): boolean {
  const e = err as MysqlError | undefined;
  return e?.fatal === true || e?.code === 'PROTOCOL_SEQUENCE_TIMEOUT';
}

/** Rows of the last statement of a multi-statement text query (one result per statement). */
export function lastRows<T>(results: unknown): T[] {
  const sets = results as unknown[];
  return sets[sets.length - 1] as T[];
}

/**
 * The leases this store holds, by token and by server session id. Losing
 * the session means losing the lease: the server frees a GET_LOCK as soon
 * as its connection ends, so the holder's `lost` signal is aborted then.
 */
export class PinnedSessions {
  readonly #byToken = new Map<string, Pinned>();
  readonly #byThread = new Map<number, Pinned>();

  pin(conn: PoolConnection, key: string, token: string): Pinned {
    const core = conn.connection as unknown as CoreConnection;
    const pinned: Pinned = {
      key,
      token,
      conn,
      threadId: core.threadId,
      controller: new AbortController(),
      detach: () => {},
    };
    // 'end' when the server closes the socket (KILL, restart), 'error' for
    // resets and timeouts; whichever comes first wins, the other is a no-op.
    const onGone = () => this.lose(pinned, new Error('connection to mysql lost'));
    core.on('error', onGone).on('end', onGone);
    pinned.detach = () => core.off('error', onGone).off('end', onGone);
    this.#byToken.set(token, pinned);
    this.#byThread.set(pinned.threadId, pinned);
    return pinned;
  }

  get(key: string, token: string): Pinned | undefined {
    const pinned = this.#byToken.get(token);
    return pinned?.key === key ? pinned : undefined;
  }

  isPinned(pinned: Pinned): boolean {
    return this.#byToken.get(pinned.token) === pinned;
  }

  all(): Pinned[] {
    return [...this.#byToken.values()];
  }

  /** Forgets the lease without touching its session; false if it was already forgotten. */
  unpin(pinned: Pinned): boolean {
    if (!this.isPinned(pinned)) return false;
    this.#byToken.delete(pinned.token);
    this.#byThread.delete(pinned.threadId);
    pinned.detach();
    return true;
  }

  /** The lease is gone without its holder asking: drop the session, tell the holder. */
  lose(pinned: Pinned, reason: Error): void {
    if (!this.unpin(pinned)) return;
    pinned.conn.destroy();
    pinned.controller.abort(reason);
  }

  /** Same, for a lease of ours about to be evicted by server session id. */
  loseSession(threadId: number, reason: Error): void {
    const pinned = this.#byThread.get(threadId);
    if (pinned) this.lose(pinned, reason);
  }

  /**
   * Gives the lock up (and with `clearRow` our row too) and returns the
   * session to the pool; a session that fails to do so is destroyed, which
   * frees its lock on the server just the same.
   */
  async free(pinned: Pinned, clearRow: boolean): Promise<void> {
    if (!this.unpin(pinned)) return;
    const name = sql.lockName(pinned.key);
    try {
      await (clearRow
        ? pinned.conn.query({ sql: sql.RELEASE, timeout: PINNED_QUERY_TIMEOUT_MS }, [pinned.key, pinned.token, name])
        : pinned.conn.query({ sql: sql.RELEASE_LOCK_ONLY, timeout: PINNED_QUERY_TIMEOUT_MS }, [name]));
      pinned.conn.release();
    } catch {
      pinned.conn.destroy();
    }
  }
}
