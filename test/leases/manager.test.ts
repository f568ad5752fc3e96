// The manager's own bookkeeping, over a real SQLite store whose acquire calls are counted:
// keys this manager holds are refused without a round trip, and only while the lease is
// still relied on.
import { setTimeout as sleep } from 'node:timers/promises';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { LeaseManager } from '../../src/leases/manager.js';
import { createSqliteStore } from '../../src/leases/stores/sqlite.js';
import type { LeaseStore } from '../../src/leases/types.js';
import { LeaseLostError, openLeaseManager } from '../../src/index.js';
import { sqliteBackend } from './backends.js';

describe('LeaseManager: contention inside one process', () => {
  let url: string;
  let leases: LeaseManager;
  let other: LeaseManager;
  let storeAcquires = 0;
  /** When set, the next store acquires fail with it (a backend gone away). */
  let failWith: Error | undefined;

  beforeEach(async () => {
    url = sqliteBackend().url;
    const store = await createSqliteStore(url);
    // SQLite answers synchronously; a real network store answers a turn of the event loop
    // later, which is when concurrent tries of one key can overlap. This one does too.
    const counted: LeaseStore = {
      ...store,
      acquireThen: undefined,
      acquire: async (...args) => {
        storeAcquires++;
        await new Promise((resolve) => setImmediate(resolve));
        if (failWith) throw failWith;
        return store.acquire(...args);
      },
    };
    leases = new LeaseManager(counted);
    other = await openLeaseManager(url);
    storeAcquires = 0;
    failWith = undefined;
  });
  afterEach(async () => {
    await leases.close();
    await other.close();
  });

  it('refuses a key it holds without asking the backend, and names its own holder', async () => {
    const lease = (await leases.tryAcquire('k', { ttlMs: 10_000, owner: 'full sync' }))!;
    expect(storeAcquires).toBe(1);
    expect(await leases.tryAcquire('k', { ttlMs: 10_000 })).toBeNull();
    const attempt = await leases.attempt('k', { ttlMs: 10_000 });
    expect(attempt.lease).toBeNull();
    expect(attempt.holder).toMatchObject({ key: 'k', fence: lease.fence, owner: { name: 'full sync', pid: process.pid } });
    expect(storeAcquires).toBe(1);

    await lease.release();
    const again = await leases.tryAcquire('k', { ttlMs: 10_000 });
    expect(storeAcquires).toBe(2);
    expect(again!.fence).toBeGreaterThan(lease.fence);
  });

  it('keeps refusing a lease removed underneath until the holder learns of the loss', async () => {
    const lease = (await leases.tryAcquire('k', { ttlMs: 10_000 }))!;
    expect(await other.forceRelease('k')).toBe(true);
    // The holder still believes it has the key, so nobody else in its process may have it...
    expect(await leases.tryAcquire('k', { ttlMs: 10_000 })).toBeNull();
    // ...until it finds out.
    await expect(lease.extend()).rejects.toBeInstanceOf(LeaseLostError);
    const next = await leases.tryAcquire('k', { ttlMs: 10_000 });
    expect(next!.fence).toBeGreaterThan(lease.fence);
    await expect(lease.release()).rejects.toBeInstanceOf(LeaseLostError);
    // The old lease's release must not make the manager forget the new one.
    expect(await leases.tryAcquire('k', { ttlMs: 10_000 })).toBeNull();
    expect(storeAcquires).toBe(2);
  });

  it('asks the backend again once its own lease is past the safe deadline', async () => {
    const lease = (await leases.tryAcquire('k', { ttlMs: 100 }))!;
    await sleep(150);
    const next = await leases.tryAcquire('k', { ttlMs: 10_000 });
    expect(storeAcquires).toBe(2);
    expect(next!.fence).toBeGreaterThan(lease.fence);
  });

  it('concurrent tries of one key share one round trip: one wins, the others see it taken', async () => {
    const tries = await Promise.all(Array.from({ length: 5 }, () => leases.tryAcquire('k', { ttlMs: 10_000 })));
    expect(storeAcquires).toBe(1);
    const won = tries.filter((lease) => lease !== null);
    expect(won).toHaveLength(1);
    // attempt() made while a try is on its way names the winner without a round trip of its own.
    const winner = won[0]!;
    await winner.release();
    const [lease, attempt] = await Promise.all([leases.tryAcquire('k', { ttlMs: 10_000, owner: 'first' }), leases.attempt('k', { ttlMs: 10_000 })]);
    expect(attempt.holder).toMatchObject({ fence: lease!.fence, owner: { name: 'first' } });
    expect(storeAcquires).toBe(2);
  });

  it('concurrent tries of a key held elsewhere share the refusal, and a failure reaches every caller', async () => {
    const theirs = (await other.tryAcquire('k', { ttlMs: 10_000 }))!;
    expect(await Promise.all([1, 2, 3].map(() => leases.tryAcquire('k', { ttlMs: 10_000 })))).toEqual([null, null, null]);
    expect(storeAcquires).toBe(1);
    await theirs.release();

    failWith = new Error('backend gone');
    const failed = await Promise.allSettled([1, 2].map(() => leases.tryAcquire('k', { ttlMs: 10_000 })));
    expect(failed.map((r) => r.status === 'rejected' && (r.reason as Error).message)).toEqual(['backend gone', 'backend gone']);
    expect(storeAcquires).toBe(2);
    // Nothing is left in flight: the next try asks the backend again.
    failWith = undefined;
    expect(await leases.tryAcquire('k', { ttlMs: 10_000 })).not.toBeNull();
    expect(storeAcquires).toBe(3);
  });

  it('leaves keys held by another manager to the backend', async () => {
    const theirs = (await other.tryAcquire('k', { ttlMs: 10_000 }))!;
    expect(await leases.tryAcquire('k', { ttlMs: 10_000 })).toBeNull();
    expect(storeAcquires).toBe(1);
    await theirs.release();
  });
});
