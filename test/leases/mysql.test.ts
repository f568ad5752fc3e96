import mysql from 'mysql2/promise';
import { aborted } from '../helpers.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LeaseLostError, openLeaseManager, type LeaseManager } from '../../src/index.js';
import { mysqlBackend } from './backends.js';
import { describeLeaseConformance } from './conformance.js';

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
