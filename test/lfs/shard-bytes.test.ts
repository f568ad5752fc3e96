import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Forgesync } from '../../src/app/forgesync.js';
import { ShardMembership } from '../../src/cluster/membership.js';
import { lfsObjectsDir } from '../../src/lfs/definition.js';
import { removeTempDirs, tempDir } from '../support/git-fixtures.js';
import { createTestDatabase, eventually, openTestForgesync, testConfig, type TestDatabase } from '../support/harness.js';
import { shardStore } from '../support/stores.js';
import { testObject } from './lfs-upstream.js';

/* A shard's `bytes` (its heartbeat) count its LFS objects like its mirrors: both fill the same disk. */

describe('a shard\'s bytes', () => {
  let database: TestDatabase;
  let app: Forgesync;

  beforeAll(async () => {
    database = await createTestDatabase('sqlite');
    ({ app } = await openTestForgesync(testConfig(database.url)));
  });

  afterAll(async () => {
    await app?.close();
    await database?.drop();
    removeTempDirs();
  });

  it('are the mirrors\' and the LFS objects\' together', async () => {
    const dataDir = tempDir();
    const mirrorsDir = join(dataDir, 'mirrors');
    mkdirSync(join(mirrorsDir, 'pics.git'), { recursive: true });
    writeFileSync(join(mirrorsDir, 'pics.git', 'pack'), Buffer.alloc(1000));
    const object = testObject(234);
    const dir = join(lfsObjectsDir(dataDir), object.oid.slice(0, 2), object.oid.slice(2, 4));
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, object.oid), object.content);
    const shards = shardStore(app);
    const membership = new ShardMembership({ shards, shardId: 'sized', dataDir, mirrorsDir, heartbeatMs: 50, logger: app.kernel.logger });
    try {
      await membership.start();
      await eventually('the measured bytes reported', async () => (await shards.list()).find((shard) => shard.id === 'sized')?.bytes === 1000 + object.size);
    } finally {
      await membership.stop();
    }
  });
});
