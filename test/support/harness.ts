import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import pg from 'pg';
import { Forgesync } from '../../src/app/forgesync.js';
import { loadConfig, type ForgesyncConfig } from '../../src/app/config.js';
import { createLogger } from '../../src/logging/logger.js';
import { POSTGRES_URL, REDIS_URL } from '../leases/backends.js';
import { LOOPBACK_NETWORKS } from './egress.js';
import { refsOf as refMap } from './git-fixtures.js';

/** Log lines a test Forgesync wrote, parsed, plus the raw text. */
export class CapturedLogs extends Writable {
  text = '';
  override _write(chunk: Buffer, _encoding: string, done: () => void): void {
    this.text += chunk.toString();
    done();
  }
  get lines(): Record<string, unknown>[] {
    return this.text
      .split('\n')
      .filter(Boolean)
      .map((line) => JSON.parse(line) as Record<string, unknown>);
  }
}

/** A database for one test file: a temp SQLite file, or a fresh PostgreSQL database. */
export interface TestDatabase {
  url: string;
  drop(): Promise<void>;
}

export async function createTestDatabase(kind: 'sqlite' | 'postgres'): Promise<TestDatabase> {
  if (kind === 'sqlite') {
    const dir = mkdtempSync(join(tmpdir(), 'forgesync-db-'));
    return { url: `sqlite:${join(dir, 'forgesync.db')}`, drop: async () => {} };
  }
  const name = `forgesync_t_${Math.random().toString(36).slice(2, 10)}`;
  const admin = new pg.Client({ connectionString: POSTGRES_URL });
  try {
    await admin.connect();
  } catch (error) {
    throw new Error(`PostgreSQL at ${POSTGRES_URL} is not reachable (${(error as Error).message}); start it with: pg_ctlcluster --skip-systemctl-redirect $(ls /etc/postgresql) main start`);
  }
  await admin.query(`CREATE DATABASE ${name}`);
  await admin.end();
  const url = new URL(POSTGRES_URL);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    drop: async () => {
      const client = new pg.Client({ connectionString: POSTGRES_URL });
      await client.connect();
      await client.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await client.end();
    },
  };
}

/** A configuration for tests: local paths and http allowed, loopback opted in (the test servers), short leases and backoff. */
export function testConfig(databaseUrl: string, env: Record<string, string> = {}): ForgesyncConfig {
  const dataDir = mkdtempSync(join(tmpdir(), 'forgesync-data-'));
  return loadConfig({
    cwd: dataDir,
    env: {
      FORGESYNC_DATA_DIR: dataDir,
      FORGESYNC_DATABASE_URL: databaseUrl,
      FORGESYNC_GIT_PROTOCOLS: 'https,ssh,http,file',
      FORGESYNC_ALLOW_NETWORKS: LOOPBACK_NETWORKS,
      FORGESYNC_LEASE_TTL: '3s',
      FORGESYNC_SCHEDULER_TICK: '100ms',
      FORGESYNC_RETRY_BASE: '1s',
      FORGESYNC_RETRY_MAX: '60s',
      ...env,
    },
  });
}

export async function openTestForgesync(config: ForgesyncConfig): Promise<{ app: Forgesync; logs: CapturedLogs }> {
  const logs = new CapturedLogs();
  const app = await Forgesync.open(config, { logger: createLogger({ level: 'debug', destination: logs }) });
  return { app, logs };
}

/** Refs of a repository as `sha refname` lines, sorted (peeled tags excluded). */
export function refsOf(gitDir: string): string {
  return [...refMap(gitDir)].map(([ref, sha]) => `${sha} ${ref}`).sort().join('\n');
}

export { eventually } from './eventually.js';

/**
 * A BullMQ jobs URL of its own for one test file: Redis `db` (each file that
 * may flush its jobs uses another) and a fresh queue prefix.
 */
export function testJobsUrl(db: number): string {
  const url = new URL(REDIS_URL);
  url.pathname = `/${db}`;
  url.searchParams.set('prefix', `t-${Math.random().toString(36).slice(2, 10)}`);
  return url.toString();
}
