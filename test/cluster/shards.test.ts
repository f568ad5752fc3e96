import { afterEach, describe, expect, it } from 'vitest';
import { ShardRepository } from '../../src/cluster/store/shards.js';
import type { Database } from '../../src/store/database.js';
import { SourceRepository } from '../../src/replication/store/sources.js';
import { postgresBackend, sqliteBackend, type StoreTarget } from '../store/backends.js';

for (const backend of [sqliteBackend, postgresBackend]) {
  describe(`shards (${backend.name})`, () => {
    let target: StoreTarget | undefined;
    let database: Database | undefined;
    afterEach(async () => {
      await database?.close();
      await target?.dispose();
      database = target = undefined;
    });
    const open = async () => {
      target = await backend.fresh();
      database = await target.open();
      return { shards: new ShardRepository(database.db, 10_000), sources: new SourceRepository(database) };
    };

    it('registers, heartbeats and lists shards with their sources; a silent shard is down', async () => {
      const { shards, sources } = await open();
      expect(await shards.list()).toEqual([]);
      const t0 = Date.now();
      await shards.register({ id: 'b', node: 'host-b:2', dataDir: '/srv/b' }, t0);
      await shards.register({ id: 'a', node: 'host-a:1', dataDir: '/srv/a' }, t0);
      await sources.create({ name: 'one', url: 'https://example.com/one.git', shard: 'a' });
      await sources.create({ name: 'two', url: 'https://example.com/two.git', shard: 'a' });
      await shards.heartbeat({ id: 'a', bytes: 1234, worker: { node: 'host-a:1' } }, t0 + 5000);
      const listed = await shards.list(t0 + 12_000);
      expect(listed).toEqual([
        { id: 'a', state: 'active', sources: 2, bytes: 1234, node: 'host-a:1', lastSeenAt: new Date(t0 + 5000).toISOString() },
        { id: 'b', state: 'down', sources: 0, bytes: 0, node: 'host-b:2', lastSeenAt: new Date(t0).toISOString() },
      ]);
      expect((await sources.get('one'))?.shard).toBe('a');
      // Only live, active shards take new sources.
      expect(await shards.candidates(t0 + 12_000)).toEqual([{ id: 'a', weight: 1 }]);
    });

    it('names the worker that beats last: a survivor takes a shared shard back from a stopped worker', async () => {
      const { shards } = await open();
      const t0 = Date.now();
      const first = { node: 'host-1:100', endpoint: 'http://10.0.0.1:7001' };
      const second = { node: 'host-2:200', endpoint: 'http://10.0.0.2:7001' };
      // Two workers serve shard x (same data dir); the second registers last and wins the row.
      await shards.register({ id: 'x', dataDir: '/srv/x', ...first }, t0);
      await shards.register({ id: 'x', dataDir: '/srv/x', ...second }, t0 + 100);
      expect(await shards.endpoints('x', t0 + 100)).toEqual([{ id: 'x', state: 'active', endpoint: second.endpoint }]);
      expect((await shards.list(t0 + 100))[0]?.node).toBe(second.node);

      // The second stops (beats no more); the first's next beat names it again.
      await shards.heartbeat({ id: 'x', bytes: 42, worker: first }, t0 + 3000);
      expect(await shards.endpoints('x', t0 + 3000)).toEqual([{ id: 'x', state: 'active', endpoint: first.endpoint }]);
      expect(await shards.list(t0 + 3000)).toEqual([
        { id: 'x', state: 'active', sources: 0, bytes: 42, node: first.node, lastSeenAt: new Date(t0 + 3000).toISOString() },
      ]);

      // A worker that runs no internal endpoint does not leave another's behind.
      await shards.heartbeat({ id: 'x', bytes: 42, worker: { node: 'host-3:300' } }, t0 + 4000);
      expect(await shards.endpoints('x', t0 + 4000)).toEqual([{ id: 'x', state: 'active', endpoint: null }]);
    });

    it('places sources added while no shard was active once one registers, and moves no placed one', async () => {
      const { shards, sources } = await open();
      await sources.create({ name: 'early', url: 'https://example.com/early.git' });
      expect(await shards.choose('early')).toBeNull();
      expect(await shards.placeUnplaced()).toEqual([]);
      await shards.register({ id: 'x', node: 'n:1', dataDir: '/srv/x' });
      expect(await shards.placeUnplaced()).toHaveLength(1);
      expect((await sources.get('early'))?.shard).toBe('x');
      await shards.register({ id: 'y', node: 'n:2', dataDir: '/srv/y' });
      expect(await shards.placeUnplaced()).toEqual([]);
      expect((await sources.get('early'))?.shard).toBe('x');
    });
  });
}
