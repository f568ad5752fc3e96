import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { withSpan } from '../tracing/index.js';
import { LeaseLostError, LeaseManagerClosedError, LeaseUnavailableError } from './errors.js';
import { eitherAborted } from './abort.js';
import { startHeartbeat } from './heartbeat.js';
import { Lease, type LeaseLoss } from './lease.js';
import type {
  ForceReleaseOptions,
  LeaseHolder,
  LeaseRequest,
  LeaseStore,
  OwnerRecord,
  ScopedLeaseRequest,
  StoreAcquireRequest,
  StoreAcquireResult,
  WaitingLeaseRequest,
} from './types.js';
import {
  validateDuration,
  validateFence,
  validateKey,
  validateOwnerName,
  validatePrefix,
  validateTtl,
} from './validate.js';

/** The outcome of one non-blocking attempt: the lease, or who has the key. */
export type LeaseAttempt = { lease: Lease; holder: null } | { lease: null; holder: LeaseHolder | null };

/**
 * What this manager's leases went through since it opened, for the metrics
 * (leases/metrics.ts): heartbeat renewals that failed with a backend error
 * (retried sooner), and leases lost before their holder let go, by how.
 */
export interface LeaseIncidents {
  renewalFailures: number;
  lost: Record<LeaseLoss, number>;
}

/** What tryWithLease did: ran the work (and what it returned), or found the key taken (and by whom). */
export type LeaseRun<T> = { ran: true; value: T } | { ran: false; holder: LeaseHolder | null };

/** Work done under a lease: `signal` aborts when the lease is lost or the caller's own signal aborts. */
export type LeaseWork<T> = (lease: Lease, signal: AbortSignal) => Promise<T> | T;

const HOST = hostname();
const NOT_ACQUIRED: Promise<null> = Promise.resolve(null);
const toNull = (): null => null;

/** What inspect() would say of a lease this manager holds. */
const holderOf = (lease: Lease): LeaseHolder => ({ key: lease.key, owner: lease.owner, fence: lease.fence, expiresAt: lease.expiresAt });

/**
 * Hands out exclusive, fenced leases on keys, over one backend store.
 * Create it with `openLeaseManager(url)`.
 */
export class LeaseManager {
  readonly #store: LeaseStore;
  /**
   * The leases this manager handed out and has not seen released, by key.
   * A key in here whose lease is still `held` is refused without asking the
   * backend: the backend could only say no, or (if the lease was removed
   * underneath and the holder has not noticed yet) give a second holder in
   * this process the key while the first still believes it has it.
   */
  readonly #held = new Map<string, Lease>();
  /** tryAcquire round trips on their way, by key (at most one per key: later tries share it). */
  readonly #trying = new Map<string, Promise<Lease | null>>();
  #closed = false;
  readonly #incidents: LeaseIncidents = { renewalFailures: 0, lost: { expired: 0, taken: 0 } };

  /** @internal use openLeaseManager */
  constructor(store: LeaseStore) {
    this.#store = store;
  }

  /** The backend's name: "sqlite", "redis", "postgres" or "mysql". */
  get backend(): string {
    return this.#store.kind;
  }

  /** Renewal failures and lost leases since this manager opened (a copy: the counts go on). */
  get incidents(): LeaseIncidents {
    return { renewalFailures: this.#incidents.renewalFailures, lost: { ...this.#incidents.lost } };
  }

  /**
   * Takes the lease if it is free; never waits. Returns null when held.
   *
   * Contention inside this process is settled here rather than at the
   * backend: a key held through this manager is refused at once, and a try
   * made while another try of the same key is on its way shares that one's
   * round trip and gets null (the key is then ours, or someone else's).
   * Like a mutex's try-lock, it may thus report a key as taken that another
   * process let go of a moment ago; it never hands out a taken key.
   */
  tryAcquire(key: string, request: LeaseRequest): Promise<Lease | null> {
    // Not async, and no holder lookup: on the hot path every microtask hop
    // keeps the lease held longer and every extra read costs a round trip.
    let owner: OwnerRecord;
    let ttlMs: number;
    try {
      this.#assertOpen();
      validateKey(key);
      ttlMs = validateTtl(request?.ttlMs);
      owner = this.#owner(request?.owner);
    } catch (error) {
      return Promise.reject(error);
    }
    if (this.#held.get(key)?.held) return NOT_ACQUIRED;
    const inFlight = this.#trying.get(key);
    if (inFlight) return inFlight.then(toNull);

    const attempt: StoreAcquireRequest = { key, token: randomUUID(), ttlMs, owner, withHolder: false };
    const requestedAt = performance.now();
    let answered = false;
    const build = (result: StoreAcquireResult) => {
      answered = true;
      this.#trying.delete(key);
      return result.acquired ? this.#lease(attempt, requestedAt, result) : null;
    };
    const trying = this.#store.acquireThen ? this.#store.acquireThen(attempt, build) : this.#store.acquire(attempt).then(build);
    // A store may answer synchronously (SQLite); then there is nothing in flight to share.
    if (!answered) {
      this.#trying.set(key, trying);
      trying.catch(() => {
        if (this.#trying.get(key) === trying) this.#trying.delete(key);
      });
    }
    return trying;
  }

  /**
   * Like tryAcquire, but when the key is taken also says who holds it, in
   * the same round trip, for the skip line
   * `operation skipped - process locked by "name(pid)"`.
   */
  async attempt(key: string, request: LeaseRequest): Promise<LeaseAttempt> {
    this.#assertOpen();
    validateKey(key);
    const ttlMs = validateTtl(request?.ttlMs);
    return this.#attempt(key, ttlMs, this.#owner(request?.owner));
  }

  /**
   * Takes the lease, retrying every `retryMs` for up to `waitMs`; throws
   * LeaseUnavailableError naming the holder when the wait runs out.
   */
  async acquire(key: string, request: WaitingLeaseRequest): Promise<Lease> {
    this.#assertOpen();
    validateKey(key);
    const ttlMs = validateTtl(request?.ttlMs);
    const owner = this.#owner(request.owner);
    const waitMs = validateDuration(request.waitMs ?? 0, 'waitMs', 0);
    const retryMs = validateDuration(request.retryMs ?? Math.max(10, Math.min(100, Math.floor(waitMs / 10))), 'retryMs', 1, 60_000);
    const started = performance.now();
    for (;;) {
      const result = await this.#attempt(key, ttlMs, owner);
      if (result.lease) return result.lease;
      const waited = performance.now() - started;
      if (waited >= waitMs) throw new LeaseUnavailableError(key, result.holder, Math.round(waited));
      // Jitter spreads contenders out so they do not retry in lockstep.
      const pause = Math.min(waitMs - waited, retryMs * (0.75 + Math.random() * 0.5));
      await sleep(Math.max(1, pause));
      this.#assertOpen();
    }
  }

  /**
   * Takes the lease, waiting up to `waitMs` (see acquire), and runs `work`
   * under it (see tryWithLease for how). Throws LeaseUnavailableError when
   * the wait runs out.
   */
  async withLease<T>(key: string, request: ScopedLeaseRequest, work: LeaseWork<T>): Promise<T> {
    return this.#runHolding(await this.acquire(key, request), request, work);
  }

  /**
   * Runs `work` under the lease of `key` if it is free, never waiting:
   * renews the lease by heartbeat (every ttl/3 by default) while `work`
   * runs, hands `work` a signal that aborts when the lease is lost or
   * `request.signal` aborts (a shutdown), and always releases it afterwards.
   * Should `work` fail after the lease was lost, the loss is what is thrown
   * (with the work's error as `cause`).
   * @returns `{ ran: true, value }`, or `{ ran: false, holder }` naming who has the key (for the skip line).
   */
  async tryWithLease<T>(key: string, request: ScopedLeaseRequest, work: LeaseWork<T>): Promise<LeaseRun<T>> {
    // Taking the lease is a span of whatever is traced (a sync, an import job), `busy` when someone else holds it.
    const attempt = await withSpan(
      'lease acquire',
      { 'forgesync.lease.key': key },
      async (span) => {
        const tried = await this.attempt(key, request);
        if (!tried.lease) span.setAttributes({ 'forgesync.lease.busy': true });
        return tried;
      },
      { inTraceOnly: true },
    );
    if (!attempt.lease) return { ran: false, holder: attempt.holder };
    return { ran: true, value: await this.#runHolding(attempt.lease, request, work) };
  }

  async #runHolding<T>(lease: Lease, request: ScopedLeaseRequest, work: LeaseWork<T>): Promise<T> {
    let stopHeartbeat: () => void = () => {};
    let signal: { signal: AbortSignal; detach: () => void } | undefined;
    try {
      const period = validateDuration(request.heartbeatMs ?? Math.max(1, Math.floor(request.ttlMs / 3)), 'heartbeatMs', 1, request.ttlMs);
      stopHeartbeat = startHeartbeat(lease, period, (error) => {
        this.#incidents.renewalFailures++;
        request.onRenewError?.(error);
      });
      signal = request.signal ? eitherAborted(lease.signal, request.signal) : { signal: lease.signal, detach: () => {} };
      return await work(lease, signal.signal);
    } catch (error) {
      if (lease.signal.aborted && error !== lease.signal.reason) {
        const loss = lease.signal.reason as Error;
        throw Object.assign(loss, { cause: error });
      }
      throw error;
    } finally {
      stopHeartbeat();
      signal?.detach();
      await lease.release().catch((error: unknown) => {
        // Losing the lease was already signalled; anything else is news.
        if (!(error instanceof LeaseLostError)) throw error;
      });
    }
  }

  /** The live holder of `key`, or null. */
  async inspect(key: string): Promise<LeaseHolder | null> {
    this.#assertOpen();
    return this.#store.inspect(validateKey(key));
  }

  /** Every live holder whose key starts with `prefix`, sorted by key. */
  async list(prefix = ''): Promise<LeaseHolder[]> {
    this.#assertOpen();
    return this.#store.list(validatePrefix(prefix));
  }

  /**
   * Administrative release of an orphaned lease, whoever holds it. With
   * `fence`, only that holder is released (a newer holder is left alone).
   * Returns whether a lease was released.
   */
  async forceRelease(key: string, options: ForceReleaseOptions = {}): Promise<boolean> {
    this.#assertOpen();
    return this.#store.forceRelease(validateKey(key), validateFence(options.fence));
  }

  /** Throws LeaseBackendUnavailableError-like errors when the backend is down. */
  async ping(): Promise<void> {
    this.#assertOpen();
    await this.#store.ping();
  }

  /** Releases every lease still held through this manager, then disconnects. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    await Promise.allSettled([...this.#held.values()].map((lease) => lease.release()));
    await this.#store.close();
  }

  /** One attempt that names the holder when the key is taken (attempt, acquire). */
  async #attempt(key: string, ttlMs: number, owner: OwnerRecord): Promise<LeaseAttempt> {
    // A try of this key already on its way settles who gets it; if it won, the holder is known here.
    await this.#trying.get(key)?.catch(toNull);
    const local = this.#held.get(key);
    if (local?.held) return { lease: null, holder: holderOf(local) };
    const attempt: StoreAcquireRequest = { key, token: randomUUID(), ttlMs, owner, withHolder: true };
    const requestedAt = performance.now();
    return this.#store.acquire(attempt).then((result): LeaseAttempt => {
      if (!result.acquired) return { lease: null, holder: result.holder };
      return { lease: this.#lease(attempt, requestedAt, result), holder: null };
    });
  }

  /** The Lease for an attempt the store granted. */
  #lease({ key, token, ttlMs, owner }: StoreAcquireRequest, requestedAt: number, result: Extract<StoreAcquireResult, { acquired: true }>): Lease {
    const lease = new Lease(this.#store, {
      key,
      token,
      fence: result.fence,
      owner: { name: owner.name, pid: owner.pid, host: owner.host, acquiredAt: result.acquiredAt },
      expiresAt: result.expiresAt,
      ttlMs,
      requestedAt,
      lost: result.lost,
      onSettled: this.#forget,
      onLost: this.#countLoss,
    });
    // A lease still listed for this key was lost or given up (else the backend would have
    // refused), so the new one takes its place.
    this.#held.set(key, lease);
    return lease;
  }

  readonly #countLoss = (loss: LeaseLoss): void => {
    this.#incidents.lost[loss]++;
  };

  readonly #forget = (lease: Lease): void => {
    if (this.#held.get(lease.key) === lease) this.#held.delete(lease.key);
  };

  /** The owner record for a name, validated once per distinct name. */
  #owner(name: string | undefined): OwnerRecord {
    if (this.#lastOwner && this.#lastOwner.requested === name) return this.#lastOwner.record;
    const record: OwnerRecord = { name: validateOwnerName(name), pid: process.pid, host: HOST };
    this.#lastOwner = { requested: name, record };
    return record;
  }

  #lastOwner: { requested: string | undefined; record: OwnerRecord } | undefined;

  #assertOpen(): void {
    if (this.#closed) throw new LeaseManagerClosedError();
  }
}
