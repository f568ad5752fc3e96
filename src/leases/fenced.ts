import type { Lease } from './lease.js';

/**
 * Runs a write guarded by the lease's fence (`write` returns null when the
 * guard refused it). When it is refused, `storedFence` shows a fence above
 * the lease's, and the lease is still held, the lease store has lost its
 * counters since that fence was written (a Redis restart without
 * persistence, FLUSHDB, a failover, a move to another lease backend): the
 * lease's fence is raised above the stored one and the write is tried once
 * more. A stale holder cannot raise its fence (its token holds nothing any
 * more), so it stays refused, as fencing requires.
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
  return write(await lease.raiseFence(stored));
}
