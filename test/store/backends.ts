import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { openDatabase, type Database } from '../../src/store/database.js';

export const POSTGRES_URL = process.env.FORGESYNC_TEST_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const POSTGRES_HINT = 'pg_ctlcluster --skip-systemctl-redirect $(ls /etc/postgresql) main start';

/** One empty database location; each open() is a new connection (a second "process"). */
export interface StoreTarget {
  open(): Promise<Database>;
  dispose(): Promise<void>;
}

/** A dialect under test and how to get fresh, isolated databases on it. */
export interface StoreBackend {
  name: 'sqlite' | 'postgres';
  fresh(): Promise<StoreTarget>;
}

export const sqliteBackend: StoreBackend = {
  name: 'sqlite',
  async fresh() {
    const dir = mkdtempSync(join(tmpdir(), 'forgesync-store-'));
    const url = `sqlite:${join(dir, 'nested', 'forgesync.db')}`;
    return {
      open: () => openDatabase(url),
      dispose: async () => rmSync(dir, { recursive: true, force: true }),
    };
  },
};

/** Each fresh() is a new random schema `t_<hex>`, dropped by dispose(). */
export const postgresBackend: StoreBackend = {
  name: 'postgres',
  async fresh() {
    const admin = new pg.Client({ connectionString: POSTGRES_URL, connectionTimeoutMillis: 5000 });
    try {
      await admin.connect();
    } catch (error) {
      await admin.end().catch(() => {});
      throw new Error(
        `PostgreSQL at ${POSTGRES_URL} is not reachable (${(error as Error).message}); ` +
          `start it with: ${POSTGRES_HINT} (or set FORGESYNC_TEST_POSTGRES_URL)`,
      );
    }
    const schema = `t_${randomBytes(6).toString('hex')}`;
    return {
      open: () => openDatabase(POSTGRES_URL, { schema }),
      dispose: async () => {
        try {
          await admin.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
        } finally {
          await admin.end();
        }
      },
    };
  },
};
