import { setTimeout as sleep } from 'node:timers/promises';
import type { TokenBudget } from './pacer.js';

/**
 * How long before the stated reset the budget is asked for: GitHub states
 * the reset in whole seconds (rounded up), so the window may be back up to
 * a second sooner; and a little more for clocks that differ.
 */
export const RESET_POLL_LEAD_MS = 1200;
/** Between two asks while the window is not back yet: the wait past the reset is half this on average. */
export const RESET_POLL_MS = 50;

/**
 * Waits out a spent budget, for at most `delay` ms (the stated reset and its
 * slack: the clock's answer). Until the reset is near it sleeps; from
 * RESET_POLL_LEAD_MS before it, it asks the host for the budget (`poll`:
 * `/rate_limit`, which GitHub does not count) every RESET_POLL_MS or so, one
 * ask per token whoever waits, and returns as soon as an answer says the
 * window is back (the caller's next look at the budget sees it) — rather than
 * waiting for the rounded-up reset and the slack, up to 1.3 s per window.
 * Returns early, too, at the start of polling, so the caller looks again.
 * `poll` undefined (the host has no `/rate_limit`): the clock alone.
 */
export async function waitForReset(budget: TokenBudget, delay: number, poll: (() => Promise<void>) | undefined, signal?: AbortSignal): Promise<void> {
  const toReset = budget.toReset(Date.now());
  const untilPolling = toReset === undefined || poll === undefined ? Number.POSITIVE_INFINITY : toReset - RESET_POLL_LEAD_MS;
  if (untilPolling > 0) {
    await sleep(Math.min(delay, untilPolling, 2 ** 31 - 1), undefined, signal ? { signal } : {});
    return;
  }
  const now = Date.now();
  const ask = budget.polled(poll!, now, RESET_POLL_MS);
  // The caller looks again after the answer (back: it goes at once), or when the next ask may begin.
  if (ask) await waitAtMost(ask, delay, signal);
  else await sleep(Math.max(1, Math.min(budget.nextPollAt - now, delay)), undefined, signal ? { signal } : {});
}

/** Waits for `promise` (one that never rejects) or `ms`, whichever comes first; `signal` ends the wait with its reason. */
function waitAtMost(promise: Promise<void>, ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) {
      reject(signal.reason);
      return;
    }
    const finish = (): void => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
    };
    const onAbort = (): void => {
      finish();
      reject(signal!.reason);
    };
    const timer = setTimeout(() => {
      finish();
      resolve();
    }, Math.min(ms, 2 ** 31 - 1));
    signal?.addEventListener('abort', onAbort, { once: true });
    void promise.then(() => {
      finish();
      resolve();
    });
  });
}
