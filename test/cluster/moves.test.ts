import { readdirSync } from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import { MovesNeedRoutedJobsError, NoOtherShardError, ShardNotFoundError, ShardUnavailableError } from '../../src/cluster/errors.js';
import type { Forgesync } from '../../src/app/forgesync.js';
import { Upstream } from '../support/upstream.js';
import { createTestDatabase, eventually, openTestForgesync, refsOf, testConfig, testJobsUrl } from '../support/harness.js';
import { replicationStores } from '../support/stores.js';

/**
 * Two workers on one registry and one BullMQ, each owning a storage shard
 * (a data dir of its own): a source's jobs reach only its shard's worker, a
 * move is synced by the target and flips the placement under a new epoch,
 * and the old shard's writes are refused from then on.
 */
describe('shards: placement, moves and drains (SQLite registry, BullMQ jobs)', () => {
  const apps: Forgesync[] = [];
  afterEach(async () => {
    for (const app of apps.splice(0).reverse()) await app.close();
  });

  async function cluster() {
    const database = await createTestDatabase('sqlite');
    const jobsUrl = testJobsUrl(12);
    const worker = async (shard: string) => {
      const { app, logs } = await openTestForgesync(testConfig(database.url, { FORGESYNC_JOBS_URL: jobsUrl, FORGESYNC_SHARD: shard }));
      apps.push(app);
      await app.startService();
      return { app, logs };
    };
    return { a: await worker('a'), b: await worker('b') };
  }

  const synced = (app: Forgesync, name: string, shard: string) =>
    eventually(`${name} synced on shard ${shard}`, async () => {
      const source = await app.replication.getSource(name);
      return source.shard === shard && source.moveTo === null && source.registry.state === 'synced' && source.registry.completedSeq >= source.registry.requestedSeq ? source : null;
    }, 30_000);

  it('syncs each source on its own shard only, moves one on request, and drains a shard', async () => {
    const { a, b } = await cluster();
    const upstreams = Array.from({ length: 8 }, () => Upstream.create());
    const names: string[] = [];
    for (const [i, upstream] of upstreams.entries()) names.push((await a.app.replication.addSource({ url: upstream.bare, name: `placed-${i}` })).name);
    const placed = await Promise.all(names.map((name) => a.app.replication.getSource(name)));
    expect(new Set(placed.map((source) => source.shard))).toEqual(new Set(['a', 'b']));
    for (const source of placed) {
      const done = await synced(a.app, source.name, source.shard!);
      // The mirror is in the data dir of the shard's worker.
      expect(done.registry.mirrorPath!.startsWith(source.shard === 'a' ? a.app.config.dataDir : b.app.config.dataDir)).toBe(true);
      expect(refsOf(done.registry.mirrorPath!)).toBe(refsOf(upstreams[names.indexOf(source.name)]!.bare));
    }
    const shards = await a.app.cluster.listShards();
    expect(shards.map((shard) => [shard.id, shard.state, shard.sources])).toEqual([
      ['a', 'active', placed.filter((s) => s.shard === 'a').length],
      ['b', 'active', placed.filter((s) => s.shard === 'b').length],
    ]);

    // A move: the target syncs it from upstream, then it is placed there under the next epoch.
    const onA = placed.find((source) => source.shard === 'a')!;
    upstreams[names.indexOf(onA.name)]!.commit();
    expect(await b.app.cluster.reassignSource(onA.name, 'b')).toBe(true);
    const moved = await synced(a.app, onA.name, 'b');
    expect(moved.placementEpoch).toBe(onA.placementEpoch + 1);
    expect(moved.registry.mirrorPath!.startsWith(b.app.config.dataDir)).toBe(true);
    expect(refsOf(moved.registry.mirrorPath!)).toBe(refsOf(upstreams[names.indexOf(onA.name)]!.bare));
    expect(await a.app.cluster.reassignSource(onA.name, 'b')).toBe(false);

    // A write carrying the old epoch (a worker that still thinks it owns it) is refused.
    const stale = await replicationStores(a.app).registry.startSync(moved.id, 10n ** 12n, { trigger: 'manual', now: new Date(), epoch: onA.placementEpoch });
    expect(stale).toBeNull();

    // Drain b: everything ends up on a, synced there.
    await expect(a.app.cluster.reassignSource(onA.name, 'nowhere')).rejects.toBeInstanceOf(ShardNotFoundError);
    expect(await a.app.cluster.drainShard('b', { wait: true, timeoutMs: 60_000 })).toBeGreaterThan(0);
    for (const name of names) await synced(a.app, name, 'a');
    expect((await a.app.cluster.listShards()).map((shard) => [shard.id, shard.state, shard.sources])).toEqual([
      ['a', 'active', names.length],
      ['b', 'draining', 0],
    ]);
    await expect(a.app.cluster.reassignSource(onA.name, 'b')).rejects.toBeInstanceOf(ShardUnavailableError);
    await expect(a.app.cluster.drainShard('a')).rejects.toBeInstanceOf(NoOtherShardError);
    // The old copies: b's janitor deletes them past the grace (here none), a's keeps what a holds.
    const onB = b.app.config.mirrorsDir;
    expect(readdirSync(onB).filter((entry) => entry.endsWith('.git')).length).toBeGreaterThan(0);
    expect(await b.app.replication.removeMovedCopies('b', 60 * 60_000)).toEqual([]);
    const removed = await b.app.replication.removeMovedCopies('b', 0);
    expect(removed.length).toBeGreaterThan(0);
    expect(readdirSync(onB).filter((entry) => entry.endsWith('.git'))).toEqual([]);
    expect(await a.app.replication.removeMovedCopies('a', 0)).toEqual([]);
    for (const name of names) {
      const source = await a.app.replication.getSource(name);
      expect(refsOf(source.registry.mirrorPath!)).toBe(refsOf(upstreams[names.indexOf(name)]!.bare));
    }
  });

  it('refuses moves on in-process jobs, saying what to set, and moves nothing', async () => {
    const database = await createTestDatabase('sqlite');
    const { app } = await openTestForgesync(testConfig(database.url));
    apps.push(app);
    await app.startService();
    const source = await app.replication.addSource({ url: Upstream.create().bare, name: 'stays' });
    await expect(app.cluster.reassignSource('stays', 'elsewhere')).rejects.toBeInstanceOf(MovesNeedRoutedJobsError);
    await expect(app.cluster.drainShard('local')).rejects.toThrow(/FORGESYNC_JOBS_URL=redis:\/\//);
    expect((await app.replication.getSource('stays')).moveTo).toBeNull();
    expect((await app.cluster.listShards()).map((shard) => shard.state)).toEqual(['active']);
    expect(source.shard).toBe('local');
  });
});
