// The lease manager's incident counts and the Prometheus counters read from them, over real
// SQLite lease stores: a lease taken away underneath, one left to lapse unwatched, and one
// whose renewals fail because another connection holds the database's write lock.
import { once } from 'node:events';
import { setTimeout as sleep } from 'node:timers/promises';
import BetterSqlite3 from 'better-sqlite3';
import { Registry } from 'prom-client';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { LeaseExpiredError, LeaseLostError } from '../../src/leases/errors.js';
import type { LeaseManager } from '../../src/leases/manager.js';
import { leaseMetrics } from '../../src/leases/metrics.js';
import { openLeaseManager } from '../../src/leases/open.js';
import { sqliteFilePath } from '../../src/util/sqlite-url.js';
import { sqliteBackend } from './backends.js';

/** The value of one sample line of a scrape, or undefined when there is none. */
async function sample(registry: Registry, line: string): Promise<number | undefined> {
  const text = await registry.metrics();
  const found = text.split('\n').find((candidate) => candidate.startsWith(`${line} `));
  return found === undefined ? undefined : Number(found.slice(line.length + 1));
}

describe('lease incidents: counted by the manager, exported as counters', () => {
  let url: string;
  let leases: LeaseManager;
  let other: LeaseManager;
  let registry: Registry;

  beforeEach(async () => {
    url = sqliteBackend().url;
    leases = await openLeaseManager(url);
    other = await openLeaseManager(url);
    registry = new Registry();
    leaseMetrics(registry, leases);
  });
  afterEach(async () => {
    await leases.close();
    await other.close();
  });

  it('exports every reason at 0 before anything happened, labelled with the backend', async () => {
    expect(await sample(registry, 'forgesync_lease_renewal_failures_total{store="sqlite"}')).toBe(0);
    expect(await sample(registry, 'forgesync_leases_lost_total{store="sqlite",reason="expired"}')).toBe(0);
    expect(await sample(registry, 'forgesync_leases_lost_total{store="sqlite",reason="taken"}')).toBe(0);
  });

  it('counts a lease released by force under its heartbeat as taken, once', async () => {
    const run = await leases.tryWithLease('sync:a', { ttlMs: 10_000, heartbeatMs: 20 }, async (_lease, signal) => {
      expect(await other.forceRelease('sync:a')).toBe(true);
      await once(signal, 'abort');
      return signal.reason as Error;
    });
    expect(run.ran && run.value).toBeInstanceOf(LeaseLostError);
    expect(leases.incidents).toEqual({ renewalFailures: 0, lost: { expired: 0, taken: 1 } });
    expect(await sample(registry, 'forgesync_leases_lost_total{store="sqlite",reason="taken"}')).toBe(1);
    expect(await sample(registry, 'forgesync_leases_lost_total{store="sqlite",reason="expired"}')).toBe(0);
  });

  it('counts a lease left to lapse without renewal as expired, and its late release does not count it again', async () => {
    const lease = (await leases.tryAcquire('sync:b', { ttlMs: 100 }))!;
    await sleep(150);
    expect(lease.held).toBe(false);
    await lease.release().catch((error: unknown) => expect(error).toBeInstanceOf(LeaseLostError));
    expect(leases.incidents.lost).toEqual({ expired: 1, taken: 0 });
    expect(await sample(registry, 'forgesync_leases_lost_total{store="sqlite",reason="expired"}')).toBe(1);
  });

  it('counts a lease gone at the backend though never watched when its release finds it gone', async () => {
    const lease = (await leases.tryAcquire('sync:c', { ttlMs: 10_000 }))!;
    expect(await other.forceRelease('sync:c')).toBe(true);
    await expect(lease.release()).rejects.toBeInstanceOf(LeaseLostError);
    expect(leases.incidents.lost).toEqual({ expired: 0, taken: 1 });
  });

  it('counts renewals that fail with a backend error, then the lease they let expire', { timeout: 30_000 }, async () => {
    // Another connection takes the write lock: the heartbeat's renewal waits out the busy
    // timeout and fails with SQLITE_BUSY, by which time the lease has lapsed.
    const locker = new BetterSqlite3(sqliteFilePath(url));
    try {
      const run = await leases.tryWithLease('sync:d', { ttlMs: 1000, heartbeatMs: 100 }, async (_lease, signal) => {
        locker.exec('BEGIN EXCLUSIVE');
        await once(signal, 'abort');
        locker.exec('ROLLBACK');
        return signal.reason as Error;
      });
      expect(run.ran && run.value).toBeInstanceOf(LeaseExpiredError);
      expect(leases.incidents.renewalFailures).toBeGreaterThanOrEqual(1);
      expect(leases.incidents.lost).toEqual({ expired: 1, taken: 0 });
      expect(await sample(registry, 'forgesync_lease_renewal_failures_total{store="sqlite"}')).toBe(leases.incidents.renewalFailures);
      expect(await sample(registry, 'forgesync_leases_lost_total{store="sqlite",reason="expired"}')).toBe(1);
    } finally {
      if (locker.inTransaction) locker.exec('ROLLBACK');
      locker.close();
    }
  });

  it('counts nothing for leases used and released in time', async () => {
    await leases.tryWithLease('sync:e', { ttlMs: 10_000, heartbeatMs: 10 }, () => sleep(50));
    const lease = (await leases.tryAcquire('sync:f', { ttlMs: 10_000 }))!;
    await lease.release();
    expect(leases.incidents).toEqual({ renewalFailures: 0, lost: { expired: 0, taken: 0 } });
  });
});
