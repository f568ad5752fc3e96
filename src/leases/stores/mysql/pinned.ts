import type { LeaseHolder } from '../../types.js';
import type { Session, Sessions } from './sessions.js';

/** Bound on statements over a session, so a silently dead network cannot hang a lease. */
export const QUERY_TIMEOUT_MS = 10_000;

/**
 * The leases this store holds, by token; each owns the session pinned to it
 * (the one holding its GET_LOCK), whose `leaseToken`, `lease` and
 * `leaseLost` describe it. Losing the session means losing the lease: the
 * server frees a GET_LOCK as soon as its connection ends, and the lease's
 * `lost` signal aborts then.
 */
export class PinnedSessions {
  readonly #byToken = new Map<string, Session>();

  constructor(private readonly sessions: Sessions) {}

  /** Pins `session` to the lease; returns the signal that aborts if the session is lost while pinned. */
  pin(session: Session, token: string, lease: LeaseHolder): AbortSignal {
    const lost = new AbortController();
    session.leaseToken = token;
    session.lease = lease;
    session.leaseLost = lost;
    this.#byToken.set(token, session);
    return lost.signal;
  }

  /** The session pinned to the lease `token` holds on `key`, or undefined. */
  find(key: string, token: string): Session | undefined {
    const session = this.#byToken.get(token);
    return session?.lease?.key === key ? session : undefined;
  }

  /** Whether `session` still holds the lease of `token`. */
  holds(session: Session, token: string): boolean {
    return session.leaseToken === token && this.#byToken.get(token) === session;
  }

  all(): Session[] {
    return [...this.#byToken.values()];
  }

  /** Forgets the session's lease without touching the session or its signal; false if there was none. */
  unpin(session: Session): boolean {
    const token = session.leaseToken;
    if (token === undefined) return false;
    session.leaseToken = session.lease = session.leaseLost = undefined;
    if (this.#byToken.get(token) === session) this.#byToken.delete(token);
    return true;
  }

  /** The session ended or was dropped: its lease, if it still had one, is lost. */
  gone(session: Session, reason: Error): void {
    const lost = session.leaseLost;
    if (this.unpin(session)) lost?.abort(reason);
  }

  /** The lease is gone without its holder asking: drop the session, abort `lost` with `reason`. */
  lose(session: Session, reason: Error): void {
    const lost = session.leaseLost;
    this.unpin(session);
    this.sessions.destroy(session, reason);
    lost?.abort(reason);
  }

  /** Same, for a lease of ours about to be evicted or force-released, by server session id. */
  loseSession(threadId: number, reason: Error): void {
    const session = this.sessions.byThread(threadId);
    if (session?.leaseToken !== undefined) this.lose(session, reason);
  }
}
