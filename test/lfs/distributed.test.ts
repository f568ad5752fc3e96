import { execFile } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Forgesync } from '../../src/app/forgesync.js';
import { lfsObjectsDir } from '../../src/lfs/definition.js';
import { buildServer, type ForgesyncServer } from '../../src/server/app.js';
import { FIXTURE_ENV, removeTempDirs, tempDir } from '../support/git-fixtures.js';
import { createTestDatabase, eventually, openTestForgesync, testConfig, testJobsUrl, type TestDatabase } from '../support/harness.js';
import { testSecret } from '../support/secrets.js';
import { commitFiles, lfsRepository, secretsFile } from './fixtures.js';
import { LfsUpstream, testObject, type TestObject } from './lfs-upstream.js';

/*
 * Git LFS in distributed mode: each shard's worker replicates the LFS
 * objects of its own sources into its own data directory, and a clone with
 * git-lfs through an api process (which has no files) gets them: the batch
 * API answered by the api from the registry, the downloads forwarded to the
 * owning worker.
 */

const ADMIN = testSecret('LFS_DIST_ADMIN_TOKEN');
const READ = testSecret('LFS_DIST_READ_TOKEN');
const CLUSTER = testSecret('LFS_DIST_CLUSTER_TOKEN');
const run = promisify(execFile);
const LFS_FILTER = ['-c', 'filter.lfs.process=git-lfs filter-process', '-c', 'filter.lfs.required=true'];

describe('Git LFS across shards', () => {
  const token = testSecret('LFS_DIST_UPSTREAM_TOKEN');
  const apps: Forgesync[] = [];
  /** Source name → its object and the shard holding it. */
  const placed = new Map<string, { object: TestObject; shard: string }>();
  let database: TestDatabase;
  let upstream: LfsUpstream;
  let api: ForgesyncServer;
  let base: string;

  beforeAll(async () => {
    const root = tempDir();
    upstream = await LfsUpstream.start(root, token);
    database = await createTestDatabase('postgres');
    const env = { FORGESYNC_JOBS_URL: testJobsUrl(14), FORGESYNC_CLUSTER_TOKEN: CLUSTER, FORGESYNC_SECRETS_FILE: secretsFile(token, [upstream.forgeUrl]) };
    for (const shard of ['a', 'b']) {
      const { app } = await openTestForgesync(testConfig(database.url, { ...env, FORGESYNC_SHARD: shard, FORGESYNC_ROLE: shard === 'a' ? 'worker,scheduler' : 'worker' }));
      apps.push(app);
      await app.startService();
    }
    const { app: apiApp } = await openTestForgesync(testConfig(database.url, { ...env, FORGESYNC_ROLE: 'api' }));
    apps.push(apiApp);
    api = await buildServer(apiApp, { tokens: { admin: ADMIN, read: READ } });
    base = await api.listen({ port: 0, host: '127.0.0.1' });
    const shards = new Set<string>();
    for (let i = 0; shards.size < 2; i++) {
      const object = testObject(2000 + i);
      upstream.objects.set(object.oid, object);
      commitFiles(lfsRepository(root, `r${i}`), { 'photo.bin': object });
      const source = await apiApp.replication.addSource({ name: `lfs-${i}`, url: `${upstream.forgeUrl}/r${i}.git`, credentialRef: 'lfs_bot' });
      shards.add(source.shard!);
      placed.set(source.name, { object, shard: source.shard! });
    }
    for (const name of placed.keys()) {
      await eventually(`${name}'s LFS object stored`, async () => (await apiApp.lfs.summaries([(await apiApp.replication.getSource(name)).id])).get((await apiApp.replication.getSource(name)).id)?.objects === 1, 30_000);
    }
  }, 90_000);

  afterAll(async () => {
    await api?.close();
    for (const app of apps.splice(0).reverse()) await app.close();
    await upstream?.close();
    await database?.drop();
    removeTempDirs();
  });

  it('stores each source\'s objects on the worker of its shard only', () => {
    const apiApp = apps[apps.length - 1]!;
    for (const { object, shard } of placed.values()) {
      for (const app of apps) {
        const path = join(lfsObjectsDir(app.config.dataDir), object.oid.slice(0, 2), object.oid.slice(2, 4), object.oid);
        const owner = app !== apiApp && app.config.shardId === shard;
        expect(existsSync(path), `${app.config.shardId} ${app === apiApp ? '(api)' : ''}`).toBe(owner);
      }
    }
  });

  it('clones with git-lfs through the api, each file from the shard that holds it', async () => {
    for (const [name, { object }] of placed) {
      const dir = tempDir();
      const url = `${base.replace('http://', `http://anyone:${READ}@`)}/git/${name}.git`;
      await run('git', [...LFS_FILTER, 'clone', '-q', url, 'copy'], { cwd: dir, env: FIXTURE_ENV });
      expect(readFileSync(join(dir, 'copy', 'photo.bin'))).toEqual(object.content);
    }
  });
});
