import type { Connection } from 'mysql2';
import { execute, type Sessions } from './sessions.js';
import * as sql from './sql.js';

/** A held lease and the session pinned to it (the one holding its GET_LOCK). */
export interface Pinned {
  key: string;
  token: string;
  conn: Connection;
  /** Server session id (CONNECTION_ID()), as recorded in the row's conn_id. */
  threadId: number;
  controller: AbortController;
  detach: () => void;
}

/** Bound on queries over a pinned session, so a silently dead network cannot hang a release. */
export const PINNED_QUERY_TIMEOUT_MS = 10_000;

/**
 * The leases this store holds, by token and by server session id. Losing
 * the session means losing the lease: the server frees a GET_LOCK as soon
 * as its connection ends, so the holder's `lost` signal is aborted then.
 */
export class PinnedSessions {
  readonly #byToken = new Map<string, Pinned>();
  readonly #byThread = new Map<number, Pinned>();

  constructor(private readonly sessions: Sessions) {}

  pin(conn: Connection, key: string, token: string): Pinned {
    const pinned: Pinned = {
      key,
      token,
      conn,
      threadId: conn.threadId,
      controller: new AbortController(),
      detach: () => {},
    };
    // 'end' when the server closes the socket (KILL, restart), 'error' for
    // resets and timeouts; whichever comes first wins, the other is a no-op.
    const onGone = () => this.lose(pinned, new Error('connection to mysql lost'));
    conn.on('error', onGone).on('end', onGone);
    pinned.detach = () => conn.off('error', onGone).off('end', onGone);
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
    this.sessions.destroy(pinned.conn);
    pinned.controller.abort(reason);
  }

  /** Same, for a lease of ours about to be evicted by server session id. */
  loseSession(threadId: number, reason: Error): void {
    const pinned = this.#byThread.get(threadId);
    if (pinned) this.lose(pinned, reason);
  }

  /**
   * Gives the lock up and returns the session to the free list; a session
   * that fails to do so is dropped, which frees its lock on the server just
   * the same. The row is left alone: with its lock free it is not live.
   */
  async free(pinned: Pinned): Promise<void> {
    if (!this.unpin(pinned)) return;
    try {
      await execute(pinned.conn, sql.RELEASE, [], PINNED_QUERY_TIMEOUT_MS);
      this.sessions.give(pinned.conn);
    } catch {
      this.sessions.destroy(pinned.conn);
    }
  }
}
