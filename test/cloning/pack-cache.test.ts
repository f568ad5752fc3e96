import { randomBytes } from 'node:crypto';
import { existsSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Registry } from 'prom-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openPackCache } from '../../src/cloning/pack-cache/open.js';
import { uploadPackArgv } from '../../src/cloning/upload-pack.js';
import { GitRunner } from '../../src/git/runner.js';
import { createLogger } from '../../src/logging/logger.js';
import { git, gitAsync, removeTempDirs, tempDir, Upstream } from '../support/git-fixtures.js';
import { startTestServer, type TestServer } from '../support/test-server.js';
import { eventually } from '../support/eventually.js';
import { testSecret } from '../support/secrets.js';

/*
 * The pack cache behind smart HTTP (src/cloning/pack-cache/), with real git
 * clients against a real forgesync server: identical fetches share one
 * pack-objects run, moved refs, the time to live and the size budget drop
 * entries, a killed generation keeps nothing, and partial and shallow
 * clones come out right through it. Generations are counted by the cache's
 * own metrics (a miss is a pack-objects run).
 */

const READ = testSecret('PACK_CACHE_READ_TOKEN');
const BEARER = ['-c', `http.extraHeader=Authorization: Bearer ${READ}`];

/** Clones `name` from `t` into a new directory with `options`; returns the copy's path. */
async function cloneFrom(t: TestServer, name: string, ...options: string[]): Promise<string> {
  const dir = tempDir();
  await gitAsync(dir, ...BEARER, 'clone', '-q', ...options, `${t.url}/git/${name}.git`, 'copy');
  return join(dir, 'copy');
}

/** The sum of a metric's values whose labels include `labels` (0 before it was ever set), from a server or a registry. */
async function metric(from: TestServer | Registry, name: string, labels: Record<string, string> = {}): Promise<number> {
  const found = (from instanceof Registry ? from : from.app.kernel.metrics).getSingleMetric(name);
  if (!found) return 0;
  const { values } = await found.get();
  return values.filter((value) => Object.entries(labels).every(([key, wanted]) => value.labels[key] === wanted)).reduce((sum, value) => sum + value.value, 0);
}

const misses = (t: TestServer | Registry) => metric(t, 'forgesync_pack_cache_lookups_total', { result: 'miss' });
const hits = (t: TestServer | Registry) => metric(t, 'forgesync_pack_cache_lookups_total', { result: 'hit' });
const evictions = (t: TestServer, reason: string) => metric(t, 'forgesync_pack_cache_evictions_total', { reason });

/** The files of the cache's directories: kept packs and temporary ones. */
function cacheFiles(t: TestServer): { packs: string[]; temporary: string[] } {
  const root = join(t.app.config.dataDir, 'pack-cache');
  const files = readdirSync(root).flatMap((dir) => readdirSync(join(root, dir)));
  return { packs: files.filter((file) => file.endsWith('.pack')), temporary: files.filter((file) => file.endsWith('.tmp')) };
}

/** An upstream whose pack holds `bytes` of incompressible data (so its size is known and its pack streams in many chunks). */
function upstreamWithBlob(name: string, bytes: number): Upstream {
  const upstream = Upstream.create(tempDir(), name);
  writeFileSync(join(upstream.work, 'blob.bin'), randomBytes(bytes));
  git(upstream.work, 'add', 'blob.bin');
  git(upstream.work, 'commit', '-q', '-m', 'a large file');
  upstream.publish();
  return upstream;
}

async function addSynced(t: TestServer, name: string, upstream: Upstream): Promise<void> {
  await t.app.replication.addSource({ name, url: upstream.bare });
  expect((await t.app.replication.sync(name)).served).toBe(true);
}

describe('the pack cache (default settings)', () => {
  let t: TestServer;
  let upstream: Upstream;

  beforeAll(async () => {
    t = await startTestServer({ listen: true, tokens: { read: READ } });
    upstream = Upstream.create(tempDir());
    for (let i = 0; i < 5; i++) upstream.commit();
    upstream.branch('feature');
    upstream.tag('v1', true);
    upstream.publish();
    await addSynced(t, 'widgets', upstream);
  });

  afterAll(async () => {
    await t?.close();
    removeTempDirs();
  });

  it('answers 8 concurrent clones of the same commit with one upload-pack run, every clone whole', async () => {
    const [missesBefore, hitsBefore] = [await misses(t), await hits(t)];
    // Each clone's ref advertisement and ref listing (protocol v2's ls-refs) run an upload-pack of their own; its fetch
    // (wants and done) is answered from the cache, whose one generation is the only upload-pack run with --git-dir.
    const { runner } = t.app;
    const plainStart = runner.start.bind(runner);
    const fetches: string[][] = [];
    runner.start = (args, options) => {
      if (args.includes('upload-pack') && !args.includes('--advertise-refs')) fetches.push(args);
      return plainStart(args, options);
    };
    const copies = await Promise.all(Array.from({ length: 8 }, () => cloneFrom(t, 'widgets'))).finally(() => (runner.start = plainStart));
    expect(fetches.filter((args) => args.includes('--git-dir'))).toHaveLength(1);
    expect(fetches).toHaveLength(8 + 1);
    for (const copy of copies) {
      expect(git(copy, 'rev-parse', 'HEAD')).toBe(git(upstream.bare, 'rev-parse', 'main'));
      expect(git(copy, 'rev-parse', 'origin/feature')).toBe(git(upstream.bare, 'rev-parse', 'feature'));
      await gitAsync(copy, 'fsck', '--strict');
    }
    expect((await misses(t)) - missesBefore).toBe(1);
    expect((await hits(t)) - hitsBefore).toBe(7);
    expect(await metric(t, 'forgesync_pack_cache_served_bytes_total')).toBeGreaterThan(0);
    expect(cacheFiles(t).packs.length).toBeGreaterThanOrEqual(1);
    expect(cacheFiles(t).temporary).toEqual([]);
  });

  it('serves a clone after the refs moved the new refs, and drops the packs made for the old ones', async () => {
    const before = await cloneFrom(t, 'widgets');
    expect(git(before, 'rev-parse', 'HEAD')).toBe(git(upstream.bare, 'rev-parse', 'main'));
    const dropped = await evictions(t, 'refs');
    const next = upstream.commit();
    upstream.publish();
    expect((await t.app.replication.sync('widgets')).served).toBe(true);

    const missesBefore = await misses(t);
    const after = await cloneFrom(t, 'widgets');
    expect(git(after, 'rev-parse', 'HEAD')).toBe(next);
    await gitAsync(after, 'fsck', '--strict');
    expect((await misses(t)) - missesBefore).toBe(1);
    expect(await evictions(t, 'refs')).toBeGreaterThan(dropped);
    // The clone from before fetches the new commit too.
    await gitAsync(before, ...BEARER, 'fetch', '-q', 'origin');
    expect(git(before, 'rev-parse', 'origin/main')).toBe(next);
  });

  it('serves partial clones through the cache, the second from it, and the blobs they fetch later', async () => {
    const first = await cloneFrom(t, 'widgets', '--filter=blob:none');
    const [missesBefore, hitsBefore] = [await misses(t), await hits(t)];
    const second = await cloneFrom(t, 'widgets', '--filter=blob:none');
    // Both of its fetches (the filtered pack, then the blobs the checkout needs) were the first clone's.
    expect((await misses(t)) - missesBefore).toBe(0);
    expect((await hits(t)) - hitsBefore).toBe(2);
    for (const copy of [first, second]) {
      expect(git(copy, 'config', 'remote.origin.partialclonefilter')).toBe('blob:none');
      expect(git(copy, 'show', 'HEAD:file.txt')).toBe(git(upstream.bare, 'show', 'main:file.txt'));
      expect(git(copy, 'rev-parse', 'HEAD')).toBe(git(upstream.bare, 'rev-parse', 'main'));
    }
  });

  it('serves shallow clones through the cache, the second from it, and deepens them', async () => {
    const first = await cloneFrom(t, 'widgets', '--depth', '1');
    const [missesBefore, hitsBefore] = [await misses(t), await hits(t)];
    const second = await cloneFrom(t, 'widgets', '--depth', '1');
    expect((await misses(t)) - missesBefore).toBe(0);
    expect((await hits(t)) - hitsBefore).toBe(1);
    for (const copy of [first, second]) {
      expect(git(copy, 'rev-list', '--count', 'HEAD')).toBe('1');
      expect(git(copy, 'rev-parse', 'HEAD')).toBe(git(upstream.bare, 'rev-parse', 'main'));
      await gitAsync(copy, 'fsck');
    }
    await gitAsync(second, ...BEARER, 'fetch', '-q', '--deepen', '2');
    expect(git(second, 'rev-list', '--count', 'HEAD')).toBe('3');
  });

  it('fails the fetch of a generation killed mid-way, keeps nothing of it, and generates anew for the next', async () => {
    const big = upstreamWithBlob('big', 2 * 1024 * 1024);
    await addSynced(t, 'big', big);
    const { runner } = t.app;
    const plainStart = runner.start.bind(runner);
    let killed = 0;
    runner.start = (args, options) => {
      const started = plainStart(args, options);
      // The cache's first generation (a whole clone's upload-pack, run with --git-dir; or pack-objects for the hook)
      // is killed once its first bytes came out (the rest waits in a full pipe).
      const generation = args.includes('pack-objects') || (args.includes('upload-pack') && args.includes('--git-dir'));
      if (generation && killed++ === 0) started.child.stdout.once('data', () => started.stop());
      return started;
    };
    const failuresBefore = await metric(t, 'forgesync_pack_cache_failures_total');
    const packsBefore = cacheFiles(t).packs;
    try {
      const failed = await cloneFrom(t, 'big').then(
        () => undefined,
        (error: { stderr?: string }) => error,
      );
      expect(failed, 'the clone of a killed generation failed').toBeDefined();
      expect((await metric(t, 'forgesync_pack_cache_failures_total')) - failuresBefore).toBe(1);
      expect(cacheFiles(t)).toEqual({ packs: packsBefore, temporary: [] });
    } finally {
      runner.start = plainStart;
    }
    const missesBefore = await misses(t);
    const copy = await cloneFrom(t, 'big');
    expect(git(copy, 'rev-parse', 'HEAD')).toBe(git(big.bare, 'rev-parse', 'main'));
    await gitAsync(copy, 'fsck', '--strict');
    expect((await misses(t)) - missesBefore).toBe(1);
    expect(cacheFiles(t).packs.length).toBe(packsBefore.length + 1);
  });
});

describe('the pack cache, bounded in size', () => {
  let t: TestServer;
  const KIB = 1024;

  beforeAll(async () => {
    // Each repository's pack is a little over 100 KiB: two do not fit, one does.
    t = await startTestServer({ listen: true, tokens: { read: READ }, env: { FORGESYNC_PACK_CACHE_MAX_BYTES: '160KiB' } });
    await addSynced(t, 'a', upstreamWithBlob('a', 100 * KIB));
    await addSynced(t, 'b', upstreamWithBlob('b', 100 * KIB));
    await addSynced(t, 'huge', upstreamWithBlob('huge', 300 * KIB));
  });

  afterAll(async () => {
    await t?.close();
    removeTempDirs();
  });

  it('evicts the least recently used pack beyond FORGESYNC_PACK_CACHE_MAX_BYTES, and keeps none larger than it', async () => {
    await cloneFrom(t, 'a');
    expect(cacheFiles(t).packs.length).toBe(1);
    const evicted = await evictions(t, 'size');
    await cloneFrom(t, 'b');
    expect((await evictions(t, 'size')) - evicted).toBe(1);
    expect(cacheFiles(t).packs.length).toBe(1);
    expect(await metric(t, 'forgesync_pack_cache_bytes')).toBeLessThanOrEqual(160 * KIB);

    // Larger than the whole budget: streamed to its clone, kept by nobody (and b made room for it meanwhile).
    const copy = await cloneFrom(t, 'huge');
    await gitAsync(copy, 'fsck', '--strict');
    expect((await evictions(t, 'size')) - evicted).toBe(3);
    expect(cacheFiles(t).packs).toEqual([]);
    expect(await metric(t, 'forgesync_pack_cache_bytes')).toBe(0);

    // a was evicted: it is generated again.
    const missesBefore = await misses(t);
    await cloneFrom(t, 'a');
    expect((await misses(t)) - missesBefore).toBe(1);
  });
});

describe('the pack cache, with a time to live', () => {
  let t: TestServer;

  beforeAll(async () => {
    t = await startTestServer({ listen: true, tokens: { read: READ }, env: { FORGESYNC_PACK_CACHE_TTL: '1s' } });
    await addSynced(t, 'a', upstreamWithBlob('a', 1024));
  });

  afterAll(async () => {
    await t?.close();
    removeTempDirs();
  });

  it('drops packs older than FORGESYNC_PACK_CACHE_TTL, from the disk too', async () => {
    await cloneFrom(t, 'a');
    const expired = await evictions(t, 'ttl');
    await eventually('the expired pack removed', () => (cacheFiles(t).packs.length === 0 ? true : null));
    expect(await evictions(t, 'ttl')).toBeGreaterThan(expired);
    const missesBefore = await misses(t);
    await cloneFrom(t, 'a');
    expect((await misses(t)) - missesBefore).toBe(1);
  });
});

describe('the pack cache, off', () => {
  it('is not opened when FORGESYNC_PACK_CACHE_MAX_BYTES is 0: fetches run pack-objects themselves', async () => {
    const t = await startTestServer({ listen: true, tokens: { read: READ }, env: { FORGESYNC_PACK_CACHE_MAX_BYTES: '0' } });
    try {
      const upstream = Upstream.create(tempDir());
      upstream.commit();
      await addSynced(t, 'plain', upstream);
      const copy = await cloneFrom(t, 'plain');
      expect(git(copy, 'rev-parse', 'HEAD')).toBe(git(upstream.bare, 'rev-parse', 'main'));
      expect(t.app.kernel.metrics.getSingleMetric('forgesync_pack_cache_lookups_total')).toBeUndefined();
      expect(existsSync(join(t.app.config.dataDir, 'pack-cache'))).toBe(false);
    } finally {
      await t.close();
      removeTempDirs();
    }
  });
});

describe('the hook programs', () => {
  /** One word for sh (git runs `--upload-pack` through a shell). */
  const shellWord = (word: string) => `'${word.replace(/'/g, `'\\''`)}'`;

  // perl is the default (it starts in a few ms); node's hook.cjs is the fallback where perl is missing.
  for (const program of ['perl', 'node'] as const) {
    it(`${program}: answers upload-pack's pack-objects for concurrent fetches from one generation`, async () => {
      const upstream = Upstream.create(tempDir());
      for (let i = 0; i < 3; i++) upstream.commit();
      upstream.publish();
      // The cache reads a view's refs from its packed-refs (as served views keep them).
      git(upstream.bare, 'pack-refs', '--all');
      const registry = new Registry();
      const opened = await openPackCache(
        { dataDir: tempDir(), maxBytes: 1024 ** 3, ttlMs: 60_000, generationTimeoutMs: 60_000, hookProgram: program, responseCommand: { argvFor: uploadPackArgv } },
        { runner: new GitRunner({ protocols: new Set(['file']) }), metrics: registry, logger: createLogger({ level: 'silent' }) },
      );
      try {
        const fetches = Array.from({ length: 4 }, async () => {
          const hook = opened.hook.attach(upstream.bare);
          try {
            const uploadPack = ['git', ...hook.args, 'upload-pack'].map(shellWord).join(' ');
            const dir = tempDir();
            await gitAsync(dir, 'clone', '-q', '--bare', '--upload-pack', uploadPack, `file://${upstream.bare}`, 'copy.git');
            return join(dir, 'copy.git');
          } finally {
            hook.release();
          }
        });
        for (const copy of await Promise.all(fetches)) {
          expect(git(copy, 'rev-parse', 'main')).toBe(git(upstream.bare, 'rev-parse', 'main'));
          await gitAsync(copy, 'fsck', '--strict');
        }
        expect(await misses(registry)).toBe(1);
        expect(await hits(registry)).toBe(3);
      } finally {
        await opened.close();
      }
    });
  }
});
