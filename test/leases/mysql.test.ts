import mysql from 'mysql2/promise';
import { aborted } from '../helpers.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LeaseLostError, openLeaseManager, type LeaseManager } from '../../src/index.js';
import { mysqlBackend } from './backends.js';
import { describeLeaseConformance } from './conformance.js';
import { Sessions } from '../../src/leases/stores/mysql/sessions.js';
import { sessionSetup } from '../../src/leases/stores/mysql/sql.js';
import { parseMysqlUrl } from '../../src/leases/stores/mysql/url.js';
import { MAX_TTL_MS } from '../../src/leases/validate.js';

let raw: mysql.Connection | undefined;
async function rawConnection(): Promise<mysql.Connection> {
  raw ??= await mysql.createConnection({ uri: mysqlBackend.url });
  return raw;
}
afterAll(async () => raw?.end());

/** Kills the server session that holds `key`'s GET_LOCK, as a DBA or a network fault would. */
async function killHolderConnection(key: string): Promise<void> {
  const connection = await rawConnection();
  const [rows] = await connection.query<mysql.RowDataPacket[]>('SELECT conn_id FROM forgesync_leases WHERE lease_key = ?', [key]);
  const id = rows[0]?.conn_id;
  if (!id) throw new Error(`no holder connection recorded for ${key}`);
  await connection.query(`KILL CONNECTION ${Number(id)}`);
}

/**
 * What a server restart does to the keys starting with `prefix`: the MEMORY table loses their
 * rows (and fences), and the sessions holding their GET_LOCKs end, freeing the locks.
 */
async function resetKeys(prefix: string): Promise<void> {
  const connection = await rawConnection();
  const [rows] = await connection.query<mysql.RowDataPacket[]>(
    `SELECT conn_id FROM forgesync_leases WHERE LEFT(lease_key, CHAR_LENGTH(?)) = ?
       AND IS_USED_LOCK(CONCAT('fs:', LEFT(SHA2(lease_key, 256), 61))) = conn_id`,
    [prefix, prefix],
  );
  await connection.query('DELETE FROM forgesync_leases WHERE LEFT(lease_key, CHAR_LENGTH(?)) = ?', [prefix, prefix]);
  for (const { conn_id: id } of rows) await connection.query(`KILL CONNECTION ${Number(id)}`).catch(() => {});
}

describeLeaseConformance(mysqlBackend, { removeUnderneath: killHolderConnection, resetStore: resetKeys });

describe('mysql: the pinned connection', () => {
  let leases: LeaseManager;
  beforeAll(async () => {
    leases = await openLeaseManager(mysqlBackend.url);
  });
  afterAll(() => leases.close());

  it('surfaces a killed connection through lease.signal at once, well before the ttl', async () => {
    const key = `mysql-kill-${Date.now()}`;
    const lease = await leases.acquire(key, { ttlMs: 60_000 });
    await killHolderConnection(key);
    await aborted(lease.signal);
    expect(lease.signal.reason).toBeInstanceOf(LeaseLostError);
    const next = await leases.acquire(key, { ttlMs: 1000, waitMs: 2000 });
    expect(next.fence).toBeGreaterThan(lease.fence);
    await next.release();
  });

  it('evicts a holder whose ttl ran out even though its connection is alive', async () => {
    const key = `mysql-hung-${Date.now()}`;
    const hung = await leases.acquire(key, { ttlMs: 100 });
    await new Promise((resolve) => setTimeout(resolve, 200));
    const other = await openLeaseManager(mysqlBackend.url);
    try {
      const next = await other.acquire(key, { ttlMs: 1000, waitMs: 2000 });
      expect(next.fence).toBeGreaterThan(hung.fence);
      await next.release();
    } finally {
      await other.close();
    }
  });
});

describe('mysql: session limits', () => {
  it('every session of the store gets the lock and statement limits, and an idle limit above the longest lease ttl', async () => {
    const limits = { idleInTransactionTimeoutMs: 1_000, lockTimeoutMs: 2_500, statementTimeoutMs: 45_000 };
    const sessions = new Sessions(parseMysqlUrl(mysqlBackend.url), undefined, sessionSetup(limits));
    try {
      const session = await sessions.connect();
      type Row = { version: string; lock_wait: unknown; innodb_wait: unknown; idle: unknown };
      const [row] = await session.run<Row[]>(
        'SELECT VERSION() AS version, @@SESSION.lock_wait_timeout AS lock_wait, @@SESSION.innodb_lock_wait_timeout AS innodb_wait, @@SESSION.wait_timeout AS idle',
        [],
        5_000,
      );
      // Lock waits end with the lock timeout, rounded up to whole seconds.
      expect(Number(row!.lock_wait)).toBe(3);
      expect(Number(row!.innodb_wait)).toBe(3);
      // A held lease's pinned session is idle up to its ttl between renewals: the server must not end it first.
      expect(Number(row!.idle) * 1000).toBeGreaterThan(MAX_TTL_MS);
      if (/mariadb/i.test(row!.version)) {
        const [statement] = await session.run<{ limit: unknown }[]>('SELECT @@SESSION.max_statement_time AS `limit`', [], 5_000);
        expect(Number(statement!.limit)).toBe(45);
      }
      sessions.give(session);
    } finally {
      sessions.close();
    }
  });

  it('a store opened with limits works as one without', async () => {
    const limited = await openLeaseManager(mysqlBackend.url, { session: { idleInTransactionTimeoutMs: 1_000, lockTimeoutMs: 1_000, statementTimeoutMs: 10_000 } });
    try {
      const lease = await limited.acquire(`mysql-limits-${Date.now()}`, { ttlMs: 1_000 });
      await lease.release();
    } finally {
      await limited.close();
    }
  });
});
