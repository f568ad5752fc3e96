import { LeaseExpiredError, LeaseLostError } from './errors.js';
import type { Lease } from './lease.js';

/**
 * Renews `lease` every `periodMs` until stopped or until the lease is lost.
 * A refused renewal aborts the lease at once (Lease.extend does that); a
 * backend error is retried sooner, and if renewals keep failing the lease's
 * own deadline timer aborts it before it lapses.
 */
export function startHeartbeat(lease: Lease, periodMs: number, onError?: (error: unknown) => void): () => void {
  let timer: NodeJS.Timeout | undefined;
  let stopped = false;

  const schedule = (delay: number) => {
    if (stopped || lease.signal.aborted) return;
    timer = setTimeout(beat, delay);
  };

  const beat = () => {
    lease.extend().then(
      () => schedule(periodMs),
      (error: unknown) => {
        if (error instanceof LeaseLostError || error instanceof LeaseExpiredError) return; // lost or expired: the lease has aborted
        onError?.(error);
        schedule(Math.max(1, Math.floor(periodMs / 3)));
      },
    );
  };

  schedule(periodMs);
  return () => {
    stopped = true;
    if (timer) clearTimeout(timer);
  };
}
