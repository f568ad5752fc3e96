import type { LeaseHolder } from '../../types.js';
import type * as sql from './sql.js';

/** What one acquire round trip reports about the key's row and lock. */
export interface AcquireRow extends sql.HolderRow {
  lock_conn: string | number;
  token: string | null;
  conn_id: string | null;
  unexpired: string | number | null;
}

export type Attempt =
  | { got: true; fence: bigint; acquiredAt: Date; expiresAt: Date }
  | { got: false; holder: LeaseHolder | null; row?: AcquireRow };

/**
 * How far ahead of this machine's clock a fence's clock part may be and still
 * be taken for the server's clock at the acquire.
 */
const CLOCK_AHEAD_MS = 1_000;

/**
 * A lease taken by ACQUIRE_FAST: its insert id is the new fence, whose clock
 * part is the server's UTC_TIMESTAMP(6) of the acquire, i.e. the row's
 * acquired_at and expires_at to the millisecond, with no result set to
 * fetch. A fence raised by RAISE_FENCE (or pushed ahead by a server clock
 * step back) runs ahead of the clock, and the next ones with it, up to any
 * distance: its clock part then says nothing about when the lease was taken.
 * So a fence over CLOCK_AHEAD_MS ahead of this machine's clock gives way to
 * `sentAt`, this machine's clock when the request was sent, as in the Redis
 * store (earlier than the server's acquire, so the lease seems to end early,
 * never late). The lease's own deadline is kept on this machine's monotonic
 * clock either way.
 */
export function fromFence(insertId: number | string, ttlMs: number, sentAt: number): Attempt {
  const fence = BigInt(insertId);
  const clockMs = Number(fence / 1000n);
  const acquiredAt = new Date(clockMs > Date.now() + CLOCK_AHEAD_MS ? sentAt : clockMs);
  return { got: true, fence, acquiredAt, expiresAt: new Date(acquiredAt.getTime() + ttlMs) };
}

export function copyHolder(holder: LeaseHolder): LeaseHolder {
  return { ...holder, owner: { ...holder.owner } };
}

/** The lock is held by the session the row names, and the row is live. */
export function isLiveHolder(row: AcquireRow): boolean {
  return row.token !== null && Number(row.unexpired) === 1 && ownsLock(row);
}

/** The lock is held by the session the row names, but the row's ttl ran out. */
export function isExpiredHolder(row: AcquireRow): boolean {
  return row.token !== null && Number(row.unexpired) !== 1 && ownsLock(row);
}

export function ownsLock(row: AcquireRow): boolean {
  return row.conn_id !== null && Number(row.lock_conn) !== 0 && String(row.lock_conn) === String(row.conn_id);
}
