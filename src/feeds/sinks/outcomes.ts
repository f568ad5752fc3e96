import { redactSecrets } from '../../util/redact.js';
import type { DeliveryOutcome } from './types.js';

/** The sinks' common ways of saying what became of an event. */

export const delivered: DeliveryOutcome = Object.freeze({ ok: true });

export function failed(error: string, extra: { retryAfterMs?: number; gone?: boolean } = {}): DeliveryOutcome {
  return { ok: false, error, ...extra };
}

/** The outcome of an event the signal stopped (before or while it was sent: it may have arrived, and will be sent again). */
export function abortedOutcome(signal: AbortSignal): DeliveryOutcome {
  const reason: unknown = signal.reason;
  const why = reason instanceof Error ? reason.message : reason === undefined ? '' : String(reason);
  return failed(`delivery aborted${why ? `: ${why.slice(0, 200)}` : ''}`);
}

/** An error's message for an outcome: one line, cut to 500 characters, with the sink's secret (if it appears at all) replaced by `***`. */
export function errorText(error: unknown, secret?: string): string {
  const message = error instanceof Error ? error.message || error.name : String(error);
  return redactSecrets(message.replace(/\s+/g, ' ').trim(), [secret]).slice(0, 500) || 'unknown error';
}

/** The outcome of a delivery that threw: aborted if the signal says so, else failed with the error's message. */
export function outcomeOfError(error: unknown, signal: AbortSignal, secret?: string): DeliveryOutcome {
  return signal.aborted ? abortedOutcome(signal) : failed(errorText(error, secret));
}

/**
 * Runs `work` on every item, at most `limit` at once, in the items' order of
 * starting. `work` must not reject (sinks turn every failure into an outcome).
 */
export async function runLimited<T>(items: readonly T[], limit: number, work: (item: T, index: number) => Promise<void>): Promise<void> {
  let next = 0;
  const lanes = Array.from({ length: Math.min(limit, items.length) }, async () => {
    while (next < items.length) {
      const index = next++;
      await work(items[index]!, index);
    }
  });
  await Promise.all(lanes);
}
