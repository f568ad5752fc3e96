import { SnapshotBudgetExceededError } from './errors.js';
import type { SnapshotHold } from './holds.js';

/** What the budget needs to know of one snapshot on disk. */
export interface SizedSnapshot {
  sourceDir: string;
  sha: string;
  bytes: number;
}

/** What the budget needs to know of the snapshot a request wants to hold. */
export interface BudgetRequest {
  source: string;
  sourceDir: string;
  sha: string;
  /** Its size: from its cache record, or measured from git when it is not on disk yet. */
  bytes: number;
}

const idOf = (snapshot: { sourceDir: string; sha: string }) => `${snapshot.sourceDir}/${snapshot.sha}`;

/**
 * The bytes of the snapshots live holds keep from eviction, each snapshot
 * counted once however many holds it has. A snapshot being made counts the
 * bytes its `making` hold measured (it has no record yet). A `base` hold does
 * not count: it ends with the request that took it, and the base was
 * evictable before and is again after.
 */
export function heldBytes(entries: SizedSnapshot[], holds: SnapshotHold[]): { bytes: number; held: Set<string> } {
  const sizes = new Map(entries.map((entry) => [idOf(entry), entry.bytes]));
  const held = new Map<string, number>();
  for (const hold of holds) {
    if (hold.purpose === 'base') continue;
    const id = idOf(hold);
    held.set(id, Math.max(held.get(id) ?? 0, sizes.get(id) ?? hold.bytes ?? 0));
  }
  let bytes = 0;
  for (const size of held.values()) bytes += size;
  return { bytes, held: new Set(held.keys()) };
}

/**
 * Refuses a hold that would make held bytes exceed `maxBytes`. One more hold
 * on a snapshot that is held already adds nothing, so it always passes.
 * @throws SnapshotBudgetExceededError
 */
export function checkBudget(request: BudgetRequest, entries: SizedSnapshot[], holds: SnapshotHold[], maxBytes: number): void {
  const { bytes, held } = heldBytes(entries, holds);
  if (held.has(idOf(request))) return;
  if (bytes + request.bytes > maxBytes) throw new SnapshotBudgetExceededError(request.source, request.sha, request.bytes, bytes, maxBytes);
}
