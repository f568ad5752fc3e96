import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { jetstreamManager } from '@nats-io/jetstream';
import { connect } from '@nats-io/transport-node';
import { Redis } from 'ioredis';
import pg from 'pg';
import { loadConfig, type ForgesyncConfig } from '../../src/app/config.js';
import { Forgesync } from '../../src/app/forgesync.js';
import { createLogger } from '../../src/logging/logger.js';
import { postgresUrlWithLimits } from '../../src/util/database-sessions.js';
import { REDIS_URL } from '../leases/backends.js';
import { POSTGRES_URL } from '../store/backends.js';
import { testSecret } from '../support/secrets.js';
import { shardStore } from '../support/stores.js';

export const NATS_URL = process.env.FORGESYNC_TEST_NATS_URL ?? 'nats://127.0.0.1:4222';

/**
 * A setup a doctor should find healthy: PostgreSQL in a schema of its own,
 * leases and jobs on the shared Redis, a source with a credential bound to
 * its host, a feed publishing to NATS into a stream of its own, every
 * webhook secret set; written as a config file for the CLI to read.
 */
export interface HealthySetup {
  dir: string;
  configFile: string;
  secretsFile: string;
  /** The configuration as `serve` would load it, with `overrides` (by setting key) over the file. */
  load(overrides?: Record<string, string>): ForgesyncConfig;
  dispose(): Promise<void>;
}

export async function healthySetup(): Promise<HealthySetup> {
  const unique = randomBytes(5).toString('hex');
  const dir = mkdtempSync(join(tmpdir(), 'forgesync-doctor-test-'));
  const schema = `doctor_${unique}`;
  const admin = new pg.Client({ connectionString: POSTGRES_URL, connectionTimeoutMillis: 5000 });
  await admin.connect();
  await admin.query(`CREATE SCHEMA ${schema}`);
  const secretsFile = join(dir, 'secrets.json');
  writeFileSync(secretsFile, JSON.stringify({ forge: { token: testSecret('DOCTOR_TOKEN'), hosts: ['git.example.com'] } }));
  const configFile = join(dir, 'forgesync.json');
  writeFileSync(
    configFile,
    JSON.stringify({
      dataDir: join(dir, 'data'),
      databaseUrl: postgresUrlWithLimits(POSTGRES_URL, undefined, [`-c search_path=${schema}`]),
      leaseUrl: REDIS_URL,
      jobsUrl: `${REDIS_URL}?prefix=doctor-${unique}`,
      secretsFile,
      allowNetworks: '127.0.0.1/32',
      githubWebhookSecret: testSecret('DOCTOR_GITHUB'),
      gitlabWebhookToken: testSecret('DOCTOR_GITLAB'),
      genericWebhookSecret: `whsec_${randomBytes(32).toString('base64')}`,
    }),
  );
  const load = (overrides: Record<string, string> = {}) => loadConfig({ configFile, overrides });
  const stream = `doctor_${unique}`;
  const subject = `forgesync.doctor.${unique}`;
  const nc = await connect({ servers: NATS_URL.replace(/^nats:\/\//, '') });
  const jsm = await jetstreamManager(nc);
  await jsm.streams.add({ name: stream, subjects: [subject] });
  const app = await Forgesync.open(load(), { logger: createLogger({ level: 'silent' }) });
  try {
    await app.replication.addSource({ name: 'widgets', url: 'https://git.example.com/acme/widgets.git', credentialRef: 'forge' });
    await app.feeds.add({ name: 'changes', sink: `${NATS_URL}/${subject}` });
    // Two storage shards as their workers register them: one on this machine, one elsewhere.
    mkdirSync(join(dir, 'shard-b'));
    await shardStore(app).register({ id: 'b', node: `${hostname()}:1`, dataDir: join(dir, 'shard-b') });
    await shardStore(app).register({ id: 'c', node: 'elsewhere.example:7', dataDir: '/srv/forgesync' });
  } finally {
    await app.close();
  }
  return {
    dir,
    configFile,
    secretsFile,
    load,
    async dispose() {
      await jsm.streams.delete(stream).catch(() => undefined);
      await nc.close();
      const redis = new Redis(REDIS_URL);
      const keys = await redis.keys(`doctor-${unique}:*`);
      if (keys.length > 0) await redis.del(...keys);
      redis.disconnect();
      await admin.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
      await admin.end();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/**
 * A directory on a filesystem that is full: a 1 MiB tmpfs filled to the last
 * block, when this process may mount one (root, and mount allowed); else
 * undefined (the caller says what it checks instead).
 */
export function fullFilesystem(parent: string): { dir: string; unmount(): void } | undefined {
  if (process.getuid?.() !== 0) return undefined;
  const dir = join(parent, 'full');
  mkdirSync(dir);
  if (spawnSync('mount', ['-t', 'tmpfs', '-o', 'size=1m', 'tmpfs', dir]).status !== 0) return undefined;
  // Filled by dd until the filesystem refuses more (dd exits non-zero on ENOSPC: expected).
  spawnSync('dd', ['if=/dev/zero', `of=${join(dir, 'filler')}`, 'bs=4k']);
  return { dir, unmount: () => void spawnSync('umount', [dir]) };
}
