import BetterSqlite3 from 'better-sqlite3';
import { Kysely, Migrator, SqliteDialect, sql } from 'kysely';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { openDatabase } from '../../../src/store/database.js';
import { fullNameKey, matchKey } from '../../../src/util/match-key.js';
import { migrationProvider } from '../../../src/store/migrations/index.js';
import { RegistryRepository } from '../../../src/replication/store/registry.js';
import { SourceRepository } from '../../../src/replication/store/sources.js';
import { createTestDatabase } from '../../support/harness.js';

describe('matchKey', () => {
  it.each([
    ['https://github.com/Codertocat/Hello-World.git', 'github.com/codertocat/hello-world'],
    ['https://github.com/codertocat/hello-world', 'github.com/codertocat/hello-world'],
    ['https://github.com/codertocat/hello-world/', 'github.com/codertocat/hello-world'],
    ['http://GitHub.com:443/Codertocat/Hello-World.git/', 'github.com/codertocat/hello-world'],
    ['git@github.com:Codertocat/Hello-World.git', 'github.com/codertocat/hello-world'],
    ['ssh://git@github.com:22/Codertocat/Hello-World.git', 'github.com/codertocat/hello-world'],
    ['git+ssh://git@github.com/codertocat/hello-world', 'github.com/codertocat/hello-world'],
    ['git://github.com/Codertocat/Hello-World.git', 'github.com/codertocat/hello-world'],
    ['https://gitlab.example.com/group/sub/project.git', 'gitlab.example.com/group/sub/project'],
    ['git@[::1]:org/repo.git', '::1/org/repo'],
    ['/srv/git/Repo.git', 'local/srv/git/repo'],
    ['file:///srv/git/Repo.git', 'local/srv/git/repo'],
    ['file:///srv/git/with%20space.git', 'local/srv/git/with space'],
  ])('%s → %s', (url, key) => {
    expect(matchKey(url)).toBe(key);
  });

  it.each([[''], ['   '], ['relative/path'], ['https://'], ['https://github.com/'], [undefined], [null]])('%s → null', (url) => {
    expect(matchKey(url as string)).toBeNull();
  });

  it('keys a full name on a host the same way', () => {
    expect(fullNameKey('GitHub.com', 'Codertocat/Hello-World')).toBe(matchKey('https://github.com/Codertocat/Hello-World.git'));
    expect(fullNameKey(undefined, 'a/b')).toBeNull();
  });
});

describe.each(['sqlite', 'postgres'] as const)('sources.match_key on %s', (kind) => {
  it('is filled on create and on a URL change, and findByMatchKeys uses it', async () => {
    const target = await createTestDatabase(kind);
    const database = await openDatabase(target.url);
    try {
      const sources = new SourceRepository(database);
      await sources.create({ name: 'a', url: 'https://github.com/Acme/A.git' });
      await sources.create({ name: 'a-ssh', url: 'git@github.com:acme/a' });
      await sources.create({ name: 'b', url: 'https://github.com/acme/b.git', enabled: false });
      const found = await sources.findByMatchKeys(['github.com/acme/a', 'github.com/acme/a', 'nowhere/x']);
      expect(found.map((s) => s.name)).toEqual(['a', 'a-ssh']);
      expect((await sources.findByMatchKeys(['github.com/acme/b']))[0]).toMatchObject({ name: 'b', enabled: false });
      expect(await sources.findByMatchKeys([])).toEqual([]);

      await sources.update('a-ssh', { url: 'git@github.com:acme/c.git' });
      expect((await sources.findByMatchKeys(['github.com/acme/a'])).map((s) => s.name)).toEqual(['a']);
      expect((await sources.findByMatchKeys(['github.com/acme/c'])).map((s) => s.name)).toEqual(['a-ssh']);
      await sources.update('a', { name: 'renamed' });
      expect((await sources.findByMatchKeys(['github.com/acme/a'])).map((s) => s.name)).toEqual(['renamed']);

      // requestByMatchKeys: one statement, enabled sources only, the request semantics of request().
      const registry = new RegistryRepository(database);
      const before = await sources.list();
      const seq = (name: string) => before.find((s) => s.name === name)!.registry.requestedSeq;
      const matched = await registry.requestByMatchKeys(['github.com/acme/a', 'github.com/acme/b', 'github.com/acme/c', 'x/y']);
      expect(matched).toEqual([
        { sourceId: before.find((s) => s.name === 'a-ssh')!.id, name: 'a-ssh', url: 'git@github.com:acme/c.git', shard: null, moveTo: null, requestedSeq: seq('a-ssh') + 1, alreadyWaiting: true },
        { sourceId: before.find((s) => s.name === 'renamed')!.id, name: 'renamed', url: 'https://github.com/Acme/A.git', shard: null, moveTo: null, requestedSeq: seq('renamed') + 1, alreadyWaiting: true },
      ]);
      const after = await sources.list();
      expect(after.find((s) => s.name === 'b')!.registry.requestedSeq).toBe(seq('b'));
      expect(await registry.requestByMatchKeys(['nowhere/x'])).toEqual([]);
      expect(await registry.requestByMatchKeys([])).toEqual([]);
      // A second call reuses the prepared statement and counts again.
      expect((await registry.requestByMatchKeys(['github.com/acme/c']))[0]!.requestedSeq).toBe(seq('a-ssh') + 2);
      // (New sources: their first sync's request still waits, so a webhook's needs no nudge of its own.)
      expect(matched.every((source) => source.alreadyWaiting)).toBe(true);

      // Several deliveries in one statement: each counts as a request, and each gets the sources its keys match.
      const sets = await registry.requestByMatchKeySets([['github.com/acme/c'], ['nowhere/x'], ['github.com/acme/c', 'github.com/acme/a'], []]);
      expect(sets.map((set) => set.map((source) => source.name))).toEqual([['a-ssh'], [], ['a-ssh', 'renamed'], []]);
      expect(sets[0]![0]!.requestedSeq).toBe(seq('a-ssh') + 4);
      expect(sets[2]![1]!.requestedSeq).toBe(seq('renamed') + 2);
      const synced = await sources.list();
      expect(synced.find((s) => s.name === 'a-ssh')!.registry.requestedSeq).toBe(seq('a-ssh') + 4);
    } finally {
      await database.close();
      await target.drop();
    }
  });
});

describe('migration 003_source_match_key', () => {
  it('backfills the keys of sources created before it, and indexes them', async () => {
    const file = join(mkdtempSync(join(tmpdir(), 'forgesync-match-')), 'forgesync.db');
    const raw = new BetterSqlite3(file);
    const old = new Kysely<any>({ dialect: new SqliteDialect({ database: raw }) });
    const { error } = await new Migrator({ db: old, provider: migrationProvider('sqlite') }).migrateTo('002_sync_attempts');
    expect(error).toBeUndefined();
    await old
      .insertInto('sources')
      .values({ name: 'legacy', url: 'https://GitHub.com/Org/Legacy.git', enabled: 1, created_at: 1, updated_at: 1 })
      .execute();
    await old.destroy();

    const database = await openDatabase(`sqlite:${file}`);
    try {
      const sources = new SourceRepository(database);
      expect((await sources.findByMatchKeys(['github.com/org/legacy'])).map((s) => s.name)).toEqual(['legacy']);
      const plan = await sql<{ detail: string }>`explain query plan select id from sources where match_key in ('x', 'y')`.execute(database.db);
      expect(plan.rows.map((r) => r.detail).join(' ')).toMatch(/sources_match_key_idx/);
    } finally {
      await database.close();
    }
  });
});
