import { WaitQueue } from '../../util/wait-queue.js';

/**
 * How many requests one token may have in flight on one API host, learned
 * from GitHub's secondary limit (AIMD, as TCP learns a link's capacity).
 * GitHub does not say how many concurrent requests it allows; a
 * secondary-limit answer is the only news, and each one risks a ban, so:
 *
 * - the limit starts small and doubles after each round of successes
 *   (slow start) until the first secondary-limit answer or the configured
 *   concurrency, so a host allowing 6 never sees 20 at once;
 * - a secondary-limit answer halves it (not below 1), once per round: the
 *   answers to requests sent before the cut are old news and do not cut again;
 * - then it grows back by one per round of successes (a round: as many
 *   successes as the limit) up to one below the level that was refused
 *   (how many were in flight when the refused request went, which may be
 *   below the limit then); that edge may be too many still (seen from here
 *   one more may be in flight than the host counts), and if it is refused
 *   it drops by one, without halving;
 *   only successes while the limit was in use count (a limit of 16 that
 *   never had more than 3 in flight has proved nothing about 16);
 *   probing that level again waits for a quiet time that doubles each time
 *   the probe is refused, so a steady host costs a few refusals per import,
 *   not one per round.
 *
 * Requests beyond the limit wait here in arrival order; a waiter's signal
 * takes it out of the queue (and its listener off the signal).
 */
export class AdaptiveLimit {
  /** Requests allowed in flight now. */
  #limit: number;
  #inFlight = 0;
  /** Raised by each cut; a permit taken before the last cut does not cut again. */
  #generation = 0;
  /** Successes since the limit last changed. */
  #successes = 0;
  /** Doubling until the first refusal. */
  #slowStart = true;
  /** The lowest limit that was refused (Infinity: none yet). */
  #refusedAt = Number.POSITIVE_INFINITY;
  #lastCutAt = 0;
  #probeQuietMs: number;
  readonly #waiting = new WaitQueue();

  /**
   * @param max the most ever allowed (the configured concurrency); raised by `allowUpTo`.
   * @param options.initial the first limit (default 2, or `max` when smaller).
   * @param options.probeQuietMs how long without a refusal before probing the refused level again (default 15 s, doubling per refused probe up to 10 min).
   */
  constructor(
    private max: number,
    readonly options: { initial?: number; probeQuietMs?: number; now?: () => number } = {},
  ) {
    this.#limit = Math.max(1, Math.min(max, options.initial ?? 2));
    this.#probeQuietMs = options.probeQuietMs ?? 15_000;
  }

  get limit(): number {
    return this.#limit;
  }

  get inFlight(): number {
    return this.#inFlight;
  }

  get waiting(): number {
    return this.#waiting.length;
  }

  /** Raises the ceiling to `max` when a client asks for more concurrency than any before (budgets are shared by imports). */
  allowUpTo(max: number): void {
    this.max = Math.max(this.max, max);
    // Still starting: the first limit is what it would have been had this ceiling been known.
    if (this.#slowStart) this.#limit = Math.max(this.#limit, Math.min(this.max, this.options.initial ?? 2));
    this.#wakeWaiters();
  }

  /**
   * Waits (FIFO) until fewer than `limit` requests are in flight and takes
   * a place; the returned permit is given back exactly once with its outcome.
   * @throws the signal's reason when it aborts while waiting (the place is not taken).
   */
  async acquire(signal?: AbortSignal): Promise<Permit> {
    signal?.throwIfAborted();
    if (this.#inFlight < this.#limit && this.#waiting.length === 0) return this.#grant();
    return this.#waiting.wait(() => this.#grant(), signal);
  }

  #grant(): Permit {
    this.#inFlight++;
    // How many were in flight with it when it went: refused, this many was too many.
    const position = this.#inFlight;
    const generation = this.#generation;
    let given = false;
    const give = (outcome: 'success' | 'secondary' | 'other'): SecondaryVerdict => {
      if (given) return 'sent-before-cut';
      given = true;
      // Growth needs evidence: a success counts only when the limit was in use (all places taken, or someone
      // waiting), and only for a request sent under the current limit (one sent before a cut says nothing of it).
      const used = (this.#inFlight >= this.#limit || this.#waiting.length > 0) && generation === this.#generation;
      this.#inFlight--;
      let verdict: SecondaryVerdict = 'sent-before-cut';
      if (outcome === 'success' && used) this.#succeeded();
      else if (outcome === 'secondary') verdict = this.#refused(generation, position);
      this.#wakeWaiters();
      return verdict;
    };
    return {
      success: () => void give('success'),
      secondaryLimited: () => give('secondary'),
      release: () => void give('other'),
    };
  }

  #succeeded(): void {
    if (++this.#successes < this.#limit || this.#limit >= this.max) return;
    const now = (this.options.now ?? Date.now)();
    const next = this.#slowStart ? this.#limit * 2 : this.#limit + 1;
    // Below the refused level growth is free; reaching it again is a probe, allowed after a quiet time.
    const probing = next >= this.#refusedAt;
    if (probing && now - this.#lastCutAt < this.#probeQuietMs) {
      this.#limit = Math.min(this.max, Math.max(this.#limit, this.#refusedAt - 1));
    } else {
      this.#limit = Math.min(this.max, next);
    }
    this.#successes = 0;
  }

  #refused(generation: number, position: number): SecondaryVerdict {
    if (generation !== this.#generation) return 'sent-before-cut';
    const now = (this.options.now ?? Date.now)();
    this.#successes = 0;
    this.#generation++;
    this.#lastCutAt = now;
    if (position >= 2 && position === this.#refusedAt - 1) {
      // Refused at the edge, the level just below a refused one: that one is too many for sure (the host counts no
      // more in flight than we do), the edge was in doubt (an answer the host sent may not have reached us yet, a
      // request sent before another may reach it after). Now it is known: one fewer, without halving.
      this.#refusedAt = position;
      this.#limit = Math.max(1, position - 1);
      return 'limit-cut';
    }
    // A probe refused again at the level refused before: wait longer before the next one.
    if (Math.max(position, this.#limit) >= this.#refusedAt) this.#probeQuietMs = Math.min(this.#probeQuietMs * 2, 600_000);
    // A request refused alone says nothing of concurrency (the host counts something else): the limit is taken as refused.
    this.#refusedAt = position >= 2 ? position : this.#limit;
    this.#limit = Math.max(1, Math.floor(this.#limit / 2));
    this.#slowStart = false;
    return position >= 2 ? 'limit-cut' : 'not-concurrency';
  }

  #wakeWaiters(): void {
    while (this.#inFlight < this.#limit && this.#waiting.wakeFirst());
  }
}

/** A place in flight; exactly one of its methods counts (later calls do nothing). */
export interface Permit {
  /** The request got an answer that was not a secondary limit: one step towards growing. */
  success(): void;
  /** The request was refused by the secondary limit: the limit halves (once per round). Says what the refusal showed. */
  secondaryLimited(): SecondaryVerdict;
  /** The request failed otherwise (network, abort): the place is given back, nothing learned. */
  release(): void;
}

/**
 * What a secondary-limit refusal showed: `limit-cut`, too many in flight (the
 * limit was halved); `sent-before-cut`, old news of a round already cut;
 * `not-concurrency`, refused with nothing else in flight, so the host counts
 * something other than concurrency and halving does not help.
 */
export type SecondaryVerdict = 'limit-cut' | 'sent-before-cut' | 'not-concurrency';
