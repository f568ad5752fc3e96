import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/app/config.js';
import type { Forgesync } from '../../src/app/forgesync.js';
import { openLeaseManager } from '../../src/leases/open.js';
import { openDatabase } from '../../src/store/database.js';
import { createTestDatabase, openTestForgesync, testConfig, type TestDatabase } from '../support/harness.js';

/*
 * A session paused inside a transaction keeps its locks until the server
 * ends it: forgesync's PostgreSQL sessions get idle_in_transaction_session_timeout,
 * lock_timeout and statement_timeout, with defaults that follow the lease ttl.
 */

describe('database session settings', () => {
  it('default to shares of the lease ttl, and parse like any other setting', () => {
    const defaults = loadConfig({ cwd: '/srv', env: { FORGESYNC_LEASE_TTL: '3s' } });
    expect(defaults).toMatchObject({
      databasePoolSize: 10,
      databasePoolWaitMs: 5_000,
      databaseIdleInTransactionTimeoutMs: 1_000,
      databaseLockTimeoutMs: 1_500,
      databaseStatementTimeoutMs: 60_000,
    });
    // Never under a second, whatever the ttl: a busy event loop may leave a live transaction idle for a moment.
    expect(loadConfig({ cwd: '/srv', env: { FORGESYNC_LEASE_TTL: '300ms' } })).toMatchObject({ databaseIdleInTransactionTimeoutMs: 1_000, databaseLockTimeoutMs: 1_000 });
    expect(loadConfig({ cwd: '/srv', env: {} })).toMatchObject({ databaseIdleInTransactionTimeoutMs: 5_000, databaseLockTimeoutMs: 7_500 });
    const given = loadConfig({
      cwd: '/srv',
      env: {
        FORGESYNC_DATABASE_POOL_SIZE: '3',
        FORGESYNC_DATABASE_POOL_WAIT: '250ms',
        FORGESYNC_DATABASE_IDLE_IN_TRANSACTION_TIMEOUT: '2s',
        FORGESYNC_DATABASE_LOCK_TIMEOUT: '0',
        FORGESYNC_DATABASE_STATEMENT_TIMEOUT: '30s',
      },
    });
    expect(given).toMatchObject({
      databasePoolSize: 3,
      databasePoolWaitMs: 250,
      databaseIdleInTransactionTimeoutMs: 2_000,
      databaseLockTimeoutMs: 0,
      databaseStatementTimeoutMs: 30_000,
    });
    expect(() => loadConfig({ cwd: '/srv', env: { FORGESYNC_DATABASE_POOL_SIZE: '0' } })).toThrow(/FORGESYNC_DATABASE_POOL_SIZE/);
  });

  describe('on PostgreSQL', () => {
    let database: TestDatabase;
    let app: Forgesync | undefined;
    beforeAll(async () => {
      database = await createTestDatabase('postgres');
    });
    afterAll(async () => {
      await app?.close();
      await database?.drop();
    });

    it("every pooled session of forgesync's registry has them", async () => {
      ({ app } = await openTestForgesync(testConfig(database.url, { FORGESYNC_LEASE_TTL: '6s', FORGESYNC_DATABASE_STATEMENT_TIMEOUT: '45s' })));
      const db = app.kernel.database.db;
      // Several at once, so that more than one pooled connection answers.
      const shown = await Promise.all(
        Array.from({ length: 4 }, () =>
          sql<{ idle: string; lock: string; statement: string }>`select current_setting('idle_in_transaction_session_timeout') as idle,
            current_setting('lock_timeout') as lock, current_setting('statement_timeout') as statement, pg_sleep(0.05)`.execute(db),
        ),
      );
      for (const { rows } of shown) expect(rows[0]).toMatchObject({ idle: '2s', lock: '3s', statement: '45s' });
      const { rows } = await sql<{ idle_in_transaction_session_timeout: string }>`show idle_in_transaction_session_timeout`.execute(db);
      expect(rows[0]?.idle_in_transaction_session_timeout).toBe('2s');
    });

    it('the pool has the size and wait it is given', async () => {
      const small = await openDatabase(database.url, { pool: { size: 1, waitMs: 200 } });
      try {
        // The one connection is taken by a transaction: another query gets none within the wait.
        await small.db.transaction().execute(async (trx) => {
          await sql`select 1`.execute(trx);
          await expect(sql`select 1`.execute(small.db)).rejects.toThrow(/timeout exceeded when trying to connect/);
        });
      } finally {
        await small.close();
      }
    });

    it('a PostgreSQL lease store keeps to the pool size it is given', async () => {
      const leasesDatabase = await createTestDatabase('postgres');
      const leases = await openLeaseManager(leasesDatabase.url, { pool: { size: 2, waitMs: 5_000 } });
      const name = new URL(leasesDatabase.url).pathname.slice(1);
      try {
        // Many at once: a pool of 10 would open more than two sessions for them.
        const held = await Promise.all(Array.from({ length: 40 }, (_, i) => leases.tryAcquire(`pool-${i}`, { ttlMs: 60_000 })));
        expect(held.every((lease) => lease !== null)).toBe(true);
        const { rows } = await sql<{ n: string }>`select count(*) as n from pg_stat_activity where datname = ${name}`.execute(app!.kernel.database.db);
        expect(Number(rows[0]!.n)).toBeGreaterThan(0);
        expect(Number(rows[0]!.n)).toBeLessThanOrEqual(2);
      } finally {
        await leases.close();
        await leasesDatabase.drop();
      }
    });

    it('migrations run without the limits (another process may be migrating, a migration may take long)', async () => {
      const fresh = await createTestDatabase('postgres');
      try {
        // Every migration runs on a new database; with the pool's 1 ms limit its statements would not.
        const limited = await openDatabase(fresh.url, { session: { idleInTransactionTimeoutMs: 1_000, lockTimeoutMs: 1, statementTimeoutMs: 1 } });
        try {
          await expect(sql`select pg_sleep(0.05)`.execute(limited.db)).rejects.toThrow(/statement timeout/);
        } finally {
          await limited.close();
        }
      } finally {
        await fresh.drop();
      }
    });
  });
});
