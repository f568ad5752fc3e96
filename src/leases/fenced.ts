import type { Lease } from './lease.js';

/** This machine's clock in microseconds, the unit MySQL's fences count in. */
const clockFence = (): bigint => BigInt(Date.now()) * 1000n;

/**
 * Runs a write guarded by the lease's fence (`write` returns null when the
 * guard refused it). When it is refused, `storedFence` shows a fence above
 * the lease's, and the lease is still held, the lease store has lost its
 * counters since that fence was written (a Redis restart without
 * persistence, FLUSHDB, a failover, a move to another lease backend): the
 * lease's fence is raised and the write is tried once more.
 *
 * It is raised above the stored fence and to at least the clock in
 * microseconds. The stored fence alone would not do: the store may have
 * handed out higher fences before it forgot them, to holders that have not
 * written yet, and they must stay fenced out. Every fence is below the
 * clock of its time (counters start at 1, a raise goes to the clock, and no
 * key is acquired a million times a second), so the clock now is above all
 * of them. A stale holder cannot raise its own fence (its token holds
 * nothing any more), so it stays refused, as fencing requires.
 * @throws LeaseLostError when the lease turns out to be gone.
 */
export async function writeFenced<T>(
  lease: Lease,
  write: (fence: bigint) => Promise<T | null>,
  storedFence: () => Promise<bigint | null>,
): Promise<T | null> {
  const first = await write(lease.fence);
  if (first !== null) return first;
  const stored = await storedFence();
  if (stored === null || stored <= lease.fence) return null;
  const clock = clockFence();
  return write(await lease.raiseFence(stored > clock ? stored : clock));
}
