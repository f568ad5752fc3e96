import { Redis } from 'ioredis';
import mysql from 'mysql2/promise';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import type { Forgesync } from '../../src/app/forgesync.js';
import { LeaseLostError, openLeaseManager } from '../../src/index.js';
import { syncLeaseKey } from '../../src/replication/sync.js';
import { MYSQL_URL, REDIS_URL } from '../leases/backends.js';
import { Upstream } from '../support/upstream.js';
import { createTestDatabase, eventually, openTestForgesync, refsOf, testConfig, type TestDatabase } from '../support/harness.js';
import { replicationStores } from '../support/stores.js';

/**
 * A lease store that loses its counters (Redis restarted without
 * persistence, FLUSHDB, a failover; or a move to another backend) hands out
 * fences below the ones the registry recorded. Every source must still sync
 * within one round, and a holder from before the reset must stay fenced out.
 */

const REGISTRY_FENCE = 1_000_000n;
/** Redis db of this file only: it is flushed. */
const RESET_REDIS_URL = (() => {
  const url = new URL(REDIS_URL);
  url.pathname = '/5';
  return url.toString();
})();

interface ResetBackend {
  name: string;
  /** The lease URL, made fresh for this file. */
  url(): Promise<string>;
  /** Wipes every lease and fence counter of the keys `keys`, the backend's own way. */
  reset(url: string, keys: string[]): Promise<void>;
}

const cleanups: (() => Promise<void>)[] = [];
afterAll(async () => {
  for (const cleanup of cleanups) await cleanup();
});

const BACKENDS: ResetBackend[] = [
  {
    name: 'sqlite',
    url: async () => (await createTestDatabase('sqlite')).url,
    reset: async (url) => {
      const { default: Database } = await import('better-sqlite3');
      const db = new Database(url.slice('sqlite:'.length));
      db.exec('DELETE FROM forgesync_leases');
      db.close();
    },
  },
  {
    name: 'redis',
    url: async () => RESET_REDIS_URL,
    reset: async (url) => {
      const redis = new Redis(url);
      await redis.flushdb();
      await redis.quit();
    },
  },
  {
    name: 'postgres',
    url: async () => {
      const database: TestDatabase = await createTestDatabase('postgres');
      cleanups.push(() => database.drop());
      return database.url;
    },
    reset: async (url) => {
      const client = new pg.Client({ connectionString: url });
      await client.connect();
      await client.query('DELETE FROM forgesync_leases');
      await client.end();
    },
  },
  {
    name: 'mysql',
    url: async () => MYSQL_URL,
    // A server restart: the MEMORY table is emptied and every session (and GET_LOCK) ends.
    reset: async (url, keys) => {
      const connection = await mysql.createConnection({ uri: url });
      const [rows] = await connection.query<mysql.RowDataPacket[]>('SELECT conn_id FROM forgesync_leases WHERE lease_key IN (?)', [keys]);
      for (const row of rows) if (row.conn_id) await connection.query(`KILL CONNECTION ${Number(row.conn_id)}`).catch(() => undefined);
      await connection.query('DELETE FROM forgesync_leases WHERE lease_key IN (?)', [keys]);
      await connection.end();
    },
  },
];

async function setRegistryFence(app: Forgesync, sourceId: number, fence: bigint): Promise<void> {
  await app.kernel.database.db.updateTable('registry').set({ fence }).where('source_id', '=', sourceId).execute();
}

for (const backend of BACKENDS) {
  describe(`fences after a reset of the ${backend.name} lease store`, () => {
    it('every source syncs within one round, and a holder from before the reset is still refused', async () => {
      const leaseUrl = await backend.url();
      const database = await createTestDatabase('sqlite');
      const config = testConfig(database.url, { FORGESYNC_LEASE_URL: leaseUrl });
      const { app } = await openTestForgesync(config);
      const { registry } = replicationStores(app);
      const stale = await openLeaseManager(leaseUrl);
      try {
        const upstreams = [Upstream.create(), Upstream.create(), Upstream.create()];
        const sources = [];
        for (const [i, upstream] of upstreams.entries()) {
          const source = await app.replication.addSource({ url: upstream.bare, name: `reset-${backend.name}-${i}` });
          expect((await app.replication.sync(source.name)).served).toBe(true);
          sources.push(source);
        }
        // Fences the registry recorded long ago, and a holder of the first source's lease from just
        // before the reset, with a fence above the registry's that it has not written yet.
        for (const source of sources) await setRegistryFence(app, source.id, REGISTRY_FENCE);
        await stale.acquire(syncLeaseKey(sources[0]!.id), { ttlMs: 1000, owner: 'raiser' }).then(async (lease) => {
          await lease.raiseFence(REGISTRY_FENCE + 10n);
          await lease.release();
        });
        const before = await stale.acquire(syncLeaseKey(sources[0]!.id), { ttlMs: 60_000, owner: 'before the reset' });
        expect(before.fence).toBeGreaterThan(REGISTRY_FENCE);
        await backend.reset(leaseUrl, sources.map((source) => syncLeaseKey(source.id)));
        for (const upstream of upstreams) upstream.commit('main');
        const attemptsBefore = await Promise.all(sources.map(async (source) => (await registry.attempts(source.id, 100)).length));
        for (const source of sources) await app.replication.requestSync(source.name, { trigger: 'webhook' });

        // No manual step: the scheduler and workers of a serving process do it.
        await app.startService();
        for (const [i, source] of sources.entries()) {
          const synced = await eventually(`${source.name} to sync`, async () => {
            const current = await app.replication.getSource(source.name);
            return current.registry.state === 'synced' && current.registry.completedSeq >= current.registry.requestedSeq ? current : null;
          });
          expect(refsOf(synced.registry.mirrorPath!)).toBe(refsOf(upstreams[i]!.bare));
          expect(synced.registry.fence!).toBeGreaterThan(REGISTRY_FENCE);
          const attempts = await registry.attempts(source.id, 100);
          // Within one round: exactly one new attempt, and it succeeded.
          expect(attempts.length - attemptsBefore[i]!, JSON.stringify(attempts.slice(0, 3), (_k, v) => (typeof v === "bigint" ? String(v) : v))).toBe(1);
          expect(attempts[0]).toMatchObject({ result: 'synced' });
        }

        // The holder from before the reset: cannot raise its fence, and its fenced writes are refused.
        await expect(before.raiseFence(REGISTRY_FENCE)).rejects.toBeInstanceOf(LeaseLostError);
        const row = await registry.get(sources[0]!.id);
        const refused = await registry.finishFailed(sources[0]!.id, before.fence, {
          error: 'late write of a stale holder',
          nextRetryAt: null,
          missing: false,
          now: new Date(),
        });
        expect(refused).toBe(false);
        expect(await registry.get(sources[0]!.id)).toEqual(row);
      } finally {
        await stale.close();
        await app.close();
      }
    });
  });
}
