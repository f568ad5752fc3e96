/**
 * Who holds a lease. `name` is the short label the caller chose ("full sync");
 * pid, host and acquiredAt are filled in by forgesync at acquire time and are
 * written in the same atomic step as the acquire itself.
 */
export interface LeaseOwner {
  name: string;
  pid: number;
  host: string;
  /** When the current holder acquired the lease, by the backend's clock. */
  acquiredAt: Date;
}

/** A live holder of a key, as reported by `inspect` and `list`. */
export interface LeaseHolder {
  key: string;
  owner: LeaseOwner;
  /** Fencing number of this holder; grows with every new holder of the key. */
  fence: bigint;
  /** When the lease lapses unless renewed, by the backend's clock. */
  expiresAt: Date;
}

/** Options shared by every way of acquiring a lease. */
export interface LeaseRequest {
  /** Time to live in milliseconds; the lease lapses after it unless extended. */
  ttlMs: number;
  /** Short owner name, e.g. "full sync". Defaults to the process title. */
  owner?: string;
}

/** Options of the waiting `acquire`. */
export interface WaitingLeaseRequest extends LeaseRequest {
  /** How long to keep trying before throwing LeaseUnavailableError. Default 0. */
  waitMs?: number;
  /** Pause between attempts. Default: min(100, waitMs / 10), at least 10 ms. */
  retryMs?: number;
}

/** Options of `withLease` and `tryWithLease` (which ignores the waiting options). */
export interface ScopedLeaseRequest extends WaitingLeaseRequest {
  /** Heartbeat period; default ttlMs / 3. */
  heartbeatMs?: number;
  /** Also aborts the work's signal (e.g. a shutdown); the lease is released as usual. */
  signal?: AbortSignal;
  /** Told about renewals that failed for a reason other than losing the lease (they are retried). */
  onRenewError?: (error: unknown) => void;
}

export interface ForceReleaseOptions {
  /** Release only if the current holder has exactly this fence. */
  fence?: bigint | number | string;
}

/** The owner fields a backend stores; acquiredAt is set by the backend's clock. */
export interface OwnerRecord {
  name: string;
  pid: number;
  host: string;
}

/** One acquire attempt, as the manager hands it to a store. */
export interface StoreAcquireRequest {
  key: string;
  /** Names this holding: extend, release and raiseFence present it. */
  token: string;
  ttlMs: number;
  owner: OwnerRecord;
  /**
   * Whether the caller needs the current holder when the key is taken; when
   * false the store may skip looking it up (and return `holder: null`).
   */
  withHolder: boolean;
}

/** Result of a backend acquire attempt. */
export type StoreAcquireResult =
  | {
      acquired: true;
      fence: bigint;
      acquiredAt: Date;
      expiresAt: Date;
      /**
       * Fires when the backend learns the lease is gone without the holder
       * asking (e.g. the pinned MySQL connection died). Optional capability.
       */
      lost?: AbortSignal;
    }
  | { acquired: false; holder: LeaseHolder | null };

/** Result of a backend extend attempt. */
export type StoreExtendResult =
  | { extended: true; expiresAt: Date }
  | { extended: false; reason: 'lost' | 'expired' };

/**
 * A lease backend. Each driver is one small file implementing this; the
 * manager adds validation, owner metadata, timers, heartbeat and waiting.
 * Every method must be atomic on the backend: a partial acquire must never
 * be observable.
 */
export interface LeaseStore {
  /** Backend name for messages and metrics: "sqlite", "redis", ... */
  readonly kind: string;
  /** Takes `request.key` for `request.token` if it is free (see StoreAcquireRequest). */
  acquire(request: StoreAcquireRequest): Promise<StoreAcquireResult>;
  /**
   * Optional: `acquire` with `then` applied in the same continuation as the
   * backend's reply. Under contention every microtask hop between the reply
   * and the caller keeps the key held longer, so stores that can, offer it.
   */
  acquireThen?<T>(request: StoreAcquireRequest, then: (result: StoreAcquireResult) => T): Promise<T>;
  extend(key: string, token: string, ttlMs: number): Promise<StoreExtendResult>;
  /** Releases if `token` still holds `key`; returns whether it did. */
  release(key: string, token: string): Promise<boolean>;
  inspect(key: string): Promise<LeaseHolder | null>;
  list(prefix: string): Promise<LeaseHolder[]>;
  /**
   * Raises the fence of the lease `token` holds on `key` so that it is above `floor`:
   * the holder's fence becomes max(its fence, floor + 1) and every later holder of the key
   * gets a larger one still. Never lowers a fence. Returns the holder's fence after the call,
   * or null when `token` no longer holds `key` (released, expired, taken over, wiped) —
   * and then nothing is changed.
   */
  raiseFence(key: string, token: string, floor: bigint): Promise<bigint | null>;
  /** Releases whoever holds `key` (only that fence when given); returns whether it did. */
  forceRelease(key: string, fence?: bigint): Promise<boolean>;
  /** Throws if the backend cannot be reached. */
  ping(): Promise<void>;
  close(): Promise<void>;
}
