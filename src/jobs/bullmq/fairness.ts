import type { Queue } from 'bullmq';

/** BullMQ's largest priority. */
export const MAX_PRIORITY = 2 ** 21 - 1;
/** How often a producer that is queueing jobs learns how far the queue has got. */
const REFRESH_MS = 100;
/** A producer that queued nothing for this long stops looking at the queue. */
const IDLE_MS = 5_000;

/** What one producer knows about one kind's queue. */
interface KindState {
  /** About the highest round already started: the first waiting job's round, less one. */
  served: number;
  /** The last round this producer gave each bucket. */
  buckets: Map<string, number>;
  /** The round given to each key whose job may still be waiting. */
  keys: Map<string, number>;
  lastUse: number;
  timer?: NodeJS.Timeout;
  refreshing?: boolean;
}

/**
 * Fairness across buckets (upstream hosts) on BullMQ, which has no groups in
 * its open-source edition: every job gets a BullMQ priority (lower runs
 * first, equal ones in the order added) chosen as a round number, as in
 * start-time fair queuing:
 *
 *   - `served` is about the highest round already started;
 *   - a bucket's next job gets `max(served, the bucket's last round) + 1`.
 *
 * So a bucket's jobs take consecutive rounds (first in, first out within a
 * bucket), a bucket with nothing queued joins at the next round, and the
 * k-th waiting job of every bucket shares round k: a host with a thousand
 * queued jobs gets one served per round, like any other host.
 *
 * The state lives in each producer's memory, so queueing a job costs no
 * round trip of its own: `served` is read from the queue every REFRESH_MS
 * while the producer queues jobs (the priority of the first waiting job),
 * and when nothing waits the rounds start over at 1, well below BullMQ's
 * limit (they are clamped to it: ties run in the order added, so the worst
 * case is plain first-in, first-out). A key nudged again while its job
 * waits keeps its round: BullMQ coalesces the nudge, and the bucket must
 * not be charged for it. Two producers queueing for one bucket each give it
 * rounds, so it gets up to one job per round from each: fairness only
 * orders work and never decides whether a job runs.
 */
export class Fairness {
  readonly #kinds = new Map<string, KindState>();

  constructor(
    private readonly queueOf: (kind: string) => Queue,
    private readonly onError: (err: unknown) => void,
  ) {}

  /** The priority for a job of `key` in `bucket`. */
  rank(kind: string, key: string, bucket: string): number {
    const state = this.#state(kind);
    state.lastUse = Date.now();
    const known = state.keys.get(key);
    if (known !== undefined && known > state.served) return known;
    const round = Math.min(Math.max(state.served, state.buckets.get(bucket) ?? 0) + 1, MAX_PRIORITY);
    state.buckets.set(bucket, round);
    state.keys.set(key, round);
    return round;
  }

  /** Stops looking at the queues. */
  close(): void {
    for (const state of this.#kinds.values()) clearInterval(state.timer);
    this.#kinds.clear();
  }

  #state(kind: string): KindState {
    let state = this.#kinds.get(kind);
    if (!state) {
      state = { served: 0, buckets: new Map(), keys: new Map(), lastUse: Date.now() };
      this.#kinds.set(kind, state);
    }
    if (!state.timer) {
      state.timer = setInterval(() => void this.#refresh(kind, state!), REFRESH_MS);
      state.timer.unref();
    }
    return state;
  }

  async #refresh(kind: string, state: KindState): Promise<void> {
    if (state.refreshing) return;
    if (Date.now() - state.lastUse > IDLE_MS) {
      clearInterval(state.timer);
      state.timer = undefined;
      return;
    }
    state.refreshing = true;
    try {
      const [next] = await this.queueOf(kind).getPrioritized(0, 0);
      if (next) {
        state.served = Math.max(0, (next.priority || 1) - 1);
        for (const [key, round] of state.keys) if (round <= state.served) state.keys.delete(key);
      } else {
        // Nothing waits: every round given out has started, so they start over.
        state.served = 0;
        state.buckets.clear();
        state.keys.clear();
      }
    } catch (err) {
      this.onError(err);
    } finally {
      state.refreshing = false;
    }
  }
}
