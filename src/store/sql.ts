import { sql, type RawBuilder } from 'kysely';
import type { RegistryState } from './types.js';

/**
 * The registry changes that record one request: the counter goes up, and a
 * settled row (synced, or failed and waiting out a backoff) becomes pending
 * again at once. A started row stays started: the running sync sees the
 * higher counter when it finishes and leaves the row pending.
 * Right-hand sides read the row's old values (standard UPDATE semantics).
 */
export function requestedChanges(nowMs: number) {
  return {
    requested_seq: sql<number>`requested_seq + 1`,
    state: sql<RegistryState>`case when state in ('synced', 'failed') then 'pending' else state end`,
    next_retry_at: sql<number | null>`case when state in ('synced', 'failed') then null else next_retry_at end`,
    updated_at: nowMs,
  };
}

/**
 * The fencing guard: a write on behalf of a lease holder applies only when
 * the row was last written by the same or an older holder (or none).
 */
export function fenceGuard(fence: bigint): RawBuilder<boolean> {
  return sql<boolean>`(fence is null or fence <= ${fence})`;
}
