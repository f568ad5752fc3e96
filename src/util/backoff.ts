/** Retry pacing after a failed sync. */
export interface BackoffPolicy {
  /** Delay before the first retry, in ms. */
  baseMs: number;
  /** Upper bound of any delay, in ms; also the cadence for upstreams that are gone. */
  maxMs: number;
}

export const DEFAULT_BACKOFF: BackoffPolicy = { baseMs: 15_000, maxMs: 60 * 60 * 1000 };

/**
 * Delay before retry number `attempt` (1 for the first retry):
 * `d = min(maxMs, baseMs · 2^(attempt−1))`, then "equal jitter": a uniform
 * pick in [d/2, d], so a fleet that failed together does not retry together
 * while the delay still grows with every failure.
 */
export function backoffDelay(attempt: number, policy: BackoffPolicy = DEFAULT_BACKOFF, random = Math.random): number {
  const exponent = Math.min(Math.max(attempt, 1) - 1, 40);
  const delay = Math.min(policy.maxMs, policy.baseMs * 2 ** exponent);
  return Math.round(delay / 2 + random() * (delay / 2));
}
