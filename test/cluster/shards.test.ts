import { afterEach, describe, expect, it } from 'vitest';
import { ShardRepository } from '../../src/cluster/shards.js';
import type { Database } from '../../src/store/database.js';
import { SourceRepository } from '../../src/store/sources.js';
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
      await shards.heartbeat('a', 1234, t0 + 5000);
      const listed = await shards.list(t0 + 12_000);
      expect(listed).toEqual([
        { id: 'a', state: 'active', sources: 2, bytes: 1234, node: 'host-a:1', lastSeenAt: new Date(t0 + 5000).toISOString() },
        { id: 'b', state: 'down', sources: 0, bytes: 0, node: 'host-b:2', lastSeenAt: new Date(t0).toISOString() },
      ]);
      expect((await sources.get('one'))?.shard).toBe('a');
      // Only live, active shards take new sources.
      expect(await shards.candidates(t0 + 12_000)).toEqual([{ id: 'a', weight: 1 }]);
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
