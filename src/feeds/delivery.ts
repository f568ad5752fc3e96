import type { OutgoingEvent } from './events.js';
import type { DeliveryOutcome, FeedSink } from './sinks/types.js';
import { ATTR, withSpan } from '../tracing/index.js';

/** One event to deliver, with what the caller needs back. */
export interface Planned<T> {
  item: T;
  key: string;
  event: OutgoingEvent;
}

/** What became of the planned events: acknowledged, failed (with the outcome), or held back behind a failure of their key. */
export interface DeliveryResult<T> {
  acked: T[];
  failed: { item: T; outcome: Extract<DeliveryOutcome, { ok: false }> }[];
  heldBack: T[];
}

/**
 * Delivers `planned` (in the order given) keeping per-key order: in rounds,
 * each round handing the sink the next event of every key still going (so
 * no call carries two events of one key, and different keys travel
 * together). When an event of a key fails, that key's later events are not
 * sent: they are held back, and the other keys keep flowing.
 */
export async function deliverInOrder<T>(sink: FeedSink, planned: readonly Planned<T>[], signal: AbortSignal): Promise<DeliveryResult<T>> {
  const result: DeliveryResult<T> = { acked: [], failed: [], heldBack: [] };
  // The common case, every key once (a bulk of changes across sources): one call, no queues.
  if (new Set(planned.map((entry) => entry.key)).size === planned.length) {
    if (planned.length === 0 || signal.aborted) return result;
    const outcomes = await deliverTraced(sink, planned, signal);
    planned.forEach((entry, index) => {
      const outcome = outcomes[index] ?? { ok: false as const, error: 'the sink gave no outcome for this event' };
      if (outcome.ok) result.acked.push(entry.item);
      else result.failed.push({ item: entry.item, outcome });
    });
    return result;
  }
  const queues = new Map<string, Planned<T>[]>();
  for (const entry of planned) {
    const queue = queues.get(entry.key);
    if (queue) queue.push(entry);
    else queues.set(entry.key, [entry]);
  }
  while (queues.size > 0 && !signal.aborted) {
    const round = [...queues.values()].map((queue) => queue.shift()!);
    const outcomes = await deliverTraced(sink, round, signal);
    round.forEach((entry, index) => {
      const outcome = outcomes[index] ?? { ok: false as const, error: 'the sink gave no outcome for this event' };
      const queue = queues.get(entry.key)!;
      if (outcome.ok) result.acked.push(entry.item);
      else {
        result.failed.push({ item: entry.item, outcome });
        result.heldBack.push(...queue.map((held) => held.item));
        queue.length = 0;
      }
      if (queue.length === 0) queues.delete(entry.key);
    });
  }
  // Stopped early: whatever was not sent stays where it was (not acknowledged, not held back).
  return result;
}

/** One call of the sink, in a `feed deliver` span. */
function deliverTraced(sink: FeedSink, entries: readonly Planned<unknown>[], signal: AbortSignal): Promise<DeliveryOutcome[]> {
  return withSpan('feed deliver', { [ATTR.feedEvents]: entries.length }, () => sink.deliver(entries.map((entry) => entry.event), signal));
}
