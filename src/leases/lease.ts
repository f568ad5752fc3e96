import { performance } from 'node:perf_hooks';
import { LeaseExpiredError, LeaseLostError } from './errors.js';
import type { LeaseOwner, LeaseStore } from './types.js';
import { validateFloor, validateTtl } from './validate.js';

/**
 * How long before the computed lapse the client gives the lease up: 10 % of
 * the ttl, between 5 ms and 2 s. It absorbs timer lateness and clock-rate
 * drift between this machine and the backend.
 */
export function safetyMargin(ttlMs: number): number {
  return Math.min(Math.max(Math.round(ttlMs * 0.1), 5), 2000);
}

interface LeaseInit {
  key: string;
  token: string;
  fence: bigint;
  owner: LeaseOwner;
  expiresAt: Date;
  ttlMs: number;
  /** performance.now() taken just before the acquire request was sent. */
  requestedAt: number;
  lost?: AbortSignal;
  onSettled: (lease: Lease) => void;
  /** Told once when the lease is lost before its holder released it (see LeaseLoss), for the manager's counts. */
  onLost?: (loss: LeaseLoss) => void;
}

/**
 * How a lease was lost before its holder let go: `expired` (its ttl ran out
 * before a renewal got through: the backend was slow or down, the process
 * stalled) or `taken` (the backend says the token no longer holds the key:
 * released by force, taken over, or the backend lost it).
 */
export type LeaseLoss = 'expired' | 'taken';

/**
 * One held lease. The backend's clock decides expiry (`expiresAt`); the
 * client keeps its own monotonic deadline counted from *before* the request
 * was sent, so a slow round trip, an event-loop stall or a wall-clock jump
 * can only make it give the lease up early, never late.
 */
export class Lease {
  readonly key: string;
  readonly token: string;
  readonly owner: LeaseOwner;
  #fence: bigint;
  #expiresAt: Date;
  #store: LeaseStore;
  /** Created on first use of `signal`: most short leases are never observed. */
  #controller: AbortController | undefined;
  /** Why the lease can no longer be relied on, once it can't. */
  #loss: Error | undefined;
  #deadline = 0;
  #safeUntil = 0;
  #ttlMs = 0;
  #timer: NodeJS.Timeout | undefined;
  #released = false;
  /** The backend call in flight, if any (calls never overlap). */
  #busy: Promise<void> | undefined;
  #onSettled: (lease: Lease) => void;
  #onLost: ((loss: LeaseLoss) => void) | undefined;
  #detachLost: (() => void) | undefined;

  /** @internal created by the LeaseManager only. */
  constructor(store: LeaseStore, init: LeaseInit) {
    this.#store = store;
    this.key = init.key;
    this.token = init.token;
    this.#fence = init.fence;
    this.owner = init.owner;
    this.#expiresAt = init.expiresAt;
    this.#onSettled = init.onSettled;
    this.#onLost = init.onLost;
    this.#setDeadline(init.requestedAt, init.ttlMs);
    if (init.lost) this.#watch(init.lost);
  }

  /** Fencing number of this holding; only raiseFence changes it. */
  get fence(): bigint {
    return this.#fence;
  }

  /** When the lease lapses unless extended, by the backend's clock. */
  get expiresAt(): Date {
    return this.#expiresAt;
  }

  /**
   * Aborts when the lease is lost or about to lapse; `signal.reason` is a
   * LeaseLostError or LeaseExpiredError. Reading it also checks the
   * monotonic deadline, so code resuming after a stall sees the truth.
   */
  get signal(): AbortSignal {
    this.#checkDeadline();
    if (!this.#controller) {
      this.#controller = new AbortController();
      if (this.#loss) this.#controller.abort(this.#loss);
      else if (!this.#released) this.#schedule();
    }
    return this.#controller.signal;
  }

  /** Milliseconds this client may still rely on the lease (0 once given up). */
  get remainingMs(): number {
    this.#checkDeadline();
    if (this.#loss || this.#released) return 0;
    return Math.max(0, Math.floor(this.#safeUntil - performance.now()));
  }

  /** Whether the lease is still held, as far as this client can tell. */
  get held(): boolean {
    this.#checkDeadline();
    return !this.#released && !this.#loss;
  }

  /** Throws the loss reason if the lease can no longer be relied on. */
  assertHeld(): void {
    if (this.#released) throw new LeaseLostError(this.key, 'it was released by this holder');
    this.#checkDeadline();
    if (this.#loss) throw this.#loss;
  }

  /**
   * Renews the lease for `ttlMs` (default: the acquire ttl) from now.
   * Refused with LeaseExpiredError once the lease lapsed or was given up,
   * and with LeaseLostError when another holder has the key.
   */
  async extend(ttlMs?: number): Promise<void> {
    const ttl = ttlMs === undefined ? this.#ttlMs : validateTtl(ttlMs);
    return this.#serialize(async () => {
      this.assertHeld();
      const requestedAt = performance.now();
      const result = await this.#store.extend(this.key, this.token, ttl);
      if (!result.extended) {
        const error =
          result.reason === 'expired' ? new LeaseExpiredError(this.key) : new LeaseLostError(this.key);
        this.#abort(error);
        throw error;
      }
      this.assertHeld();
      this.#expiresAt = result.expiresAt;
      this.#setDeadline(requestedAt, ttl);
      if (this.#timer) this.#schedule();
    });
  }

  /**
   * Raises this lease's fence above `floor` (see LeaseStore.raiseFence); resolves to the fence
   * it then has. Rejects with LeaseLostError (and aborts the lease) when the store says the token
   * no longer holds the key.
   *
   * For a holder whose fenced write was refused because the stored fence is higher than its
   * own, as happens after the lease store lost its counters: the store raises the fence only
   * while this token holds the key, so a stale holder can never get past the fence.
   * `floor` is a positive integer up to 2^53 - 2; a bad one is an InvalidLeaseOptionError.
   * Like extend, refused with the loss reason once the lease lapsed or was given up.
   */
  async raiseFence(floor: bigint | number | string): Promise<bigint> {
    const minimum = validateFloor(floor);
    return this.#serialize(async () => {
      this.assertHeld();
      const fence = await this.#store.raiseFence(this.key, this.token, minimum);
      if (fence === null) {
        const error = new LeaseLostError(this.key);
        this.#abort(error);
        throw error;
      }
      // The store raised it while we held the key, so it is the fence now, even if the
      // lease lapses before the caller gets to use it (assertHeld then says so).
      this.#fence = fence;
      this.assertHeld();
      return fence;
    });
  }

  /**
   * Gives the lease back. Idempotent for the holder; throws LeaseLostError
   * when the backend says the token no longer held the key.
   */
  release(): Promise<void> {
    if (this.#released) return this.#busy ?? Promise.resolve();
    this.#released = true;
    this.#stopTimers();
    return this.#serialize(() =>
      this.#store.release(this.key, this.token).then(
        (released) => {
          this.#onSettled(this);
          if (released) return;
          // Gone at the backend though nothing here noticed (a lease nobody watched or renewed).
          if (!this.#loss) this.#onLost?.(performance.now() >= this.#deadline ? 'expired' : 'taken');
          throw new LeaseLostError(this.key, 'it had already expired or been taken over');
        },
        (error: unknown) => {
          this.#onSettled(this);
          throw error;
        },
      ),
    );
  }

  #setDeadline(requestedAt: number, ttlMs: number): void {
    this.#ttlMs = ttlMs;
    this.#deadline = requestedAt + ttlMs;
    this.#safeUntil = this.#deadline - safetyMargin(ttlMs);
  }

  #schedule(): void {
    if (this.#timer) clearTimeout(this.#timer);
    // Timers may fire a little early: re-arm until the deadline has truly passed.
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      this.#checkDeadline();
      if (!this.#released && !this.#loss) this.#schedule();
    }, Math.max(1, Math.ceil(this.#safeUntil - performance.now())));
    this.#timer.unref();
  }

  #checkDeadline(): void {
    if (this.#released || this.#loss) return;
    const now = performance.now();
    if (now >= this.#safeUntil) {
      const lapsed = now >= this.#deadline;
      this.#abort(new LeaseExpiredError(this.key, lapsed ? 'its time to live ran out' : 'it was about to lapse without renewal'));
    }
  }

  #watch(lost: AbortSignal): void {
    const onLost = () => this.#abort(new LeaseLostError(this.key, String((lost.reason as Error)?.message ?? lost.reason)));
    if (lost.aborted) return onLost();
    lost.addEventListener('abort', onLost, { once: true });
    this.#detachLost = () => lost.removeEventListener('abort', onLost);
  }

  #abort(reason: Error): void {
    if (this.#loss) return;
    this.#loss = reason;
    this.#stopTimers();
    this.#onLost?.(reason instanceof LeaseExpiredError ? 'expired' : 'taken');
    this.#controller?.abort(reason);
  }

  #stopTimers(): void {
    if (this.#timer) clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#detachLost?.();
    this.#detachLost = undefined;
  }

  /** Runs backend calls one at a time so a heartbeat never races a release or a raise. */
  #serialize<T>(operation: () => Promise<T>): Promise<T> {
    // Straight through when idle: a chained .then would cost a hop per call.
    const run = this.#busy ? this.#busy.then(operation, operation) : operation();
    const settled: Promise<void> = run.then(
      () => undefined,
      () => undefined,
    );
    this.#busy = settled;
    void settled.then(() => {
      if (this.#busy === settled) this.#busy = undefined;
    });
    return run;
  }
}
