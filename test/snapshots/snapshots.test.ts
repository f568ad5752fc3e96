import { execFileSync } from 'node:child_process';
import { chmodSync, existsSync, lstatSync, mkdirSync, readFileSync, readdirSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { afterAll, afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Forgesync } from '../../src/app/forgesync.js';
import { mirrorPathFor } from '../../src/git/storage.js';
import { openLeaseManager } from '../../src/leases/open.js';
import { syncLeaseKey } from '../../src/replication/sync.js';
import {
  InvalidSnapshotRequestError,
  PathNotFoundError,
  RevisionNotFoundError,
  SnapshotBudgetExceededError,
  SnapshotPathEscapeError,
  formatBytes,
} from '../../src/snapshots/errors.js';
import type { Snapshot } from '../../src/snapshots/snapshot.js';
import { exportCommit, removeTree } from '../../src/snapshots/export.js';
import { SnapshotCache } from '../../src/snapshots/cache.js';
import { git, listFiles, removeTempDirs } from '../support/git-fixtures.js';
import { describeTree } from '../support/trees.js';
import { Upstream } from '../support/upstream.js';
import { createTestDatabase, eventually, openTestForgesync, testConfig, type TestDatabase } from '../support/harness.js';
import { snapshotHolds } from '../support/stores.js';

/**
 * A snapshot cache over `app`'s snapshots directory and leases that keeps at
 * most `maxCount` snapshots (the app's byte budget): what the app's own cache
 * does when its count budget is that, for a test of eviction.
 */
function budgetCache(app: Forgesync, maxCount: number): SnapshotCache {
  const { config, logger } = app;
  return new SnapshotCache({ root: config.snapshotsDir, leases: app.kernel.leases, maxCount, maxBytes: config.snapshotMaxBytes, leaseTtlMs: config.leaseTtlMs, logger });
}

/** Every file (relative path) under a snapshot directory, sorted. */
const filesOf = (dir: string) => listFiles(dir).map((file) => relative(dir, file)).sort();

/** Every entry under `dir` with its content (see describeTree). */
const contentsOf = (dir: string) => describeTree(dir, (path) => readFileSync(path, 'utf8'));

/** The files of commit `sha` as git lists them. */
function treeOf(gitDir: string, sha: string): string[] {
  return git(gitDir, 'ls-tree', '-r', '--name-only', sha).split('\n').filter(Boolean).sort();
}

/** Checks that `snapshot` holds exactly its commit: same file list and contents as git has. */
function expectExactly(snapshot: Snapshot, gitDir: string): void {
  const files = filesOf(snapshot.path);
  expect(files).toEqual(treeOf(gitDir, snapshot.sha));
  for (const file of files) {
    expect(readFileSync(join(snapshot.path, file), 'utf8'), file).toBe(git(gitDir, 'cat-file', 'blob', `${snapshot.sha}:${file}`) + '\n');
  }
}

/** Pushes a commit to `main` whose file `big.txt` is `size` bytes of `fill` (one line); returns its sha. */
function commitSized(upstream: Upstream, size: number, fill: string): string {
  writeFileSync(join(upstream.work, 'big.txt'), `${fill.repeat(size - 1)}\n`);
  git(upstream.work, 'add', '-A');
  git(upstream.work, 'commit', '-q', '-m', `big.txt of ${size} bytes of ${fill}`);
  git(upstream.work, 'push', '-q', 'origin', 'main');
  return git(upstream.work, 'rev-parse', 'HEAD');
}

/** The bytes of commit `sha`'s files as git stores them: what the snapshot budget counts. */
function treeBytes(gitDir: string, sha: string): number {
  return git(gitDir, 'ls-tree', '-r', '-l', sha)
    .split('\n')
    .reduce((sum, line) => sum + Number(line.split(/\s+/)[3]), 0);
}

/** Every name under the snapshot root and its source directories (holds, records, temp directories included). */
function snapshotFiles(root: string): string[] {
  if (!existsSync(root)) return [];
  return readdirSync(root, { recursive: true, encoding: 'utf8' })
    .filter((name) => name.split('/').length <= 2)
    .sort();
}

// The embedded default, and PostgreSQL for registry and leases (the distributed setup).
describe.each(['sqlite', 'postgres'] as const)('snapshots (%s)', (kind) => {
  let app: Forgesync;
  let upstream: Upstream;
  let db: TestDatabase;
  let appSource: { id: number; name: string };

  beforeEach(async () => {
    db = await createTestDatabase(kind);
    ({ app } = await openTestForgesync(testConfig(db.url, { FORGESYNC_SNAPSHOT_MAX_COUNT: '20' })));
    upstream = Upstream.create();
    appSource = await app.replication.addSource({ url: upstream.bare, name: 'app' });
  });
  afterEach(async () => {
    await app.close();
    await db.drop();
  });
  afterAll(() => removeTempDirs());

  const mirror = () => mirrorPathFor(app.config.mirrorsDir, appSource, upstream.bare);

  it('materialises a branch once, read-only, and shares it between readers of that commit', async () => {
    const first = await app.snapshots.open('app', 'main', { sync: true });
    expect(first.sha).toBe(git(upstream.bare, 'rev-parse', 'main'));
    expect(first.stale).toBe(false);
    expectExactly(first, upstream.bare);
    expect(existsSync(join(first.path, '.git'))).toBe(false);
    const file = join(first.path, filesOf(first.path)[0] as string);
    expect(statSync(file).mode & 0o222).toBe(0);
    expect(statSync(first.path).mode & 0o222).toBe(0);

    const inode = statSync(file).ino;
    const second = await app.snapshots.open('app', first.sha);
    expect(second.path).toBe(first.path);
    expect(second.handle).not.toBe(first.handle);
    expect(statSync(file).ino).toBe(inode);
    await first.release();
    await second.release();
    await first.release(); // idempotent
  });

  it('materialises a commit once when two instances ask for it at the same moment', async () => {
    const sha = upstream.commit('main', 5);
    await app.replication.sync('app');
    const { app: second } = await openTestForgesync(app.config);
    try {
      const [a, b, c] = await Promise.all([app.snapshots.open('app', sha), second.snapshots.open('app', sha), second.snapshots.open('app', 'main')]);
      expect(new Set([a.path, b.path, c.path]).size).toBe(1);
      expect(new Set([a.handle, b.handle, c.handle]).size).toBe(3);
      expectExactly(a, upstream.bare);
      const [entry] = app.snapshots.list();
      expect(entry?.holds).toHaveLength(3);
      // No leftover export directories: the losers of the race waited and shared.
      expect(readdirSync(join(entry!.path, '..')).filter((name) => name.startsWith('.tmp-'))).toEqual([]);
    } finally {
      await second.close();
    }
  });

  it('derives a commit from a materialised neighbour: unchanged files shared, the result exactly a fresh export', async () => {
    const w = upstream.work;
    const write = (path: string, text: string) => {
      mkdirSync(dirname(join(w, path)), { recursive: true });
      writeFileSync(join(w, path), text);
    };
    write('keep.txt', 'unchanged\n');
    // Mostly unchanged, like real neighbours: derivation pays off below half the files changed.
    for (let i = 0; i < 20; i++) write(`lib/m${i}.txt`, `module ${i}\n`);
    write('a.txt', 'one\n');
    write('dir/b.txt', 'b\n');
    write('script.sh', '#!/bin/sh\n');
    write('x', 'a file that becomes a directory\n');
    symlinkSync('a.txt', join(w, 'link'));
    git(w, 'add', '-A');
    git(w, 'commit', '-q', '-m', 'base');
    git(w, 'push', '-q', 'origin', 'main');
    const base = await app.snapshots.open('app', 'main', { sync: true });

    write('a.txt', 'two\n');
    rmSync(join(w, 'dir'), { recursive: true });
    write('dir2/c.txt', 'c\n');
    chmodSync(join(w, 'script.sh'), 0o755);
    rmSync(join(w, 'link'));
    write('link', 'now a regular file\n');
    rmSync(join(w, 'x'));
    write('x/inside.txt', 'now a directory\n');
    git(w, 'add', '-A');
    git(w, 'commit', '-q', '-m', 'next');
    git(w, 'push', '-q', 'origin', 'main');
    const next = await app.snapshots.open('app', 'main', { sync: true });
    expect(next.sha).not.toBe(base.sha);

    // Derived: the unchanged file is the base's (one inode), the changed one is new.
    expect(statSync(join(next.path, 'keep.txt')).ino).toBe(statSync(join(base.path, 'keep.txt')).ino);
    expect(statSync(join(next.path, 'a.txt')).ino).not.toBe(statSync(join(base.path, 'a.txt')).ino);
    // The base is untouched.
    expect(readFileSync(join(base.path, 'a.txt'), 'utf8')).toBe('one\n');
    expect(lstatSync(join(base.path, 'link')).isSymbolicLink()).toBe(true);
    expect(existsSync(join(base.path, 'dir/b.txt'))).toBe(true);
    expect(statSync(join(base.path, 'keep.txt')).mode & 0o222).toBe(0);

    // And exactly what a full export of that commit holds: types, modes, contents, links.
    const fresh = join(app.config.snapshotsDir, 'fresh-export');
    await exportCommit({ runner: app.runner, gitDir: mirror(), sha: next.sha, target: fresh, parent: app.config.snapshotsDir });
    expect(contentsOf(next.path)).toEqual(contentsOf(fresh));
    expect(contentsOf(next.path)).toContain('script.sh 555 file #!/bin/sh\n');
    await removeTree(fresh);
    await base.release();
    await next.release();
  });

  it('gives two concurrent consumers of two branches their own commit, every round, across syncs and force-pushes', async () => {
    upstream.commit('feature/payment', 2);
    const held: Snapshot[] = [];
    for (let round = 0; round < 12; round++) {
      if (round % 3 === 2) upstream.forcePush('main');
      else upstream.commit('main', 1 + (round % 3));
      if (round % 2 === 0) upstream.forcePush('feature/payment');
      else upstream.commit('feature/payment');
      const [main, feature] = await Promise.all([
        app.snapshots.open('app', 'main', { sync: true }),
        app.snapshots.open('app', 'feature/payment', { sync: round % 2 === 0 }),
        app.replication.requestSync('app'),
        (async () => {
          upstream.commit('main');
          await app.replication.sync('app');
        })(),
      ]);
      expect(main.sha).not.toBe(feature.sha);
      // Every object ever pushed is still in the mirror until gc, so git can list both trees.
      expectExactly(main, mirror());
      expectExactly(feature, mirror());
      held.push(main, feature);
    }
    // Snapshots made in earlier rounds are untouched by everything that happened since.
    for (const snapshot of held) expectExactly(snapshot, mirror());
    await Promise.all(held.map((snapshot) => snapshot.release()));
  });

  it('keeps a snapshot in use intact through a force-push, a sync and git gc --prune=now', async () => {
    upstream.commit('main', 3);
    const snapshot = await app.snapshots.open('app', 'main', { sync: true });
    const before = filesOf(snapshot.path).map((file) => [file, readFileSync(join(snapshot.path, file), 'utf8')]);
    upstream.forcePush('main');
    upstream.forcePush('main');
    await app.replication.sync('app');
    // Housekeeping keeps the tips a sync moved away in the mirror's HEAD reflog for its grace period: expired here too.
    execFileSync('git', ['--git-dir', mirror(), '-c', 'gc.reflogExpire=now', '-c', 'gc.reflogExpireUnreachable=now', 'gc', '--quiet', '--prune=now']);
    // The commit really is gone from the mirror now.
    expect(() => git(mirror(), 'cat-file', '-e', snapshot.sha)).toThrow();
    const after = filesOf(snapshot.path).map((file) => [file, readFileSync(join(snapshot.path, file), 'utf8')]);
    expect(after).toEqual(before);
    await snapshot.release();
  });

  it('evicts least recently used snapshots beyond the budget, never one in use', async () => {
    const shas = [upstream.commit('main'), upstream.commit('main'), upstream.commit('main'), upstream.commit('main')];
    await app.replication.sync('app');
    // The app's snapshots on disk, evicted by a cache of the budget under test (the app's own is large).
    const cache = (maxCount: number) => budgetCache(app, maxCount);
    const opened: Snapshot[] = [];
    // All four held: over budget, but nothing may go.
    for (const sha of shas) opened.push(await app.snapshots.open('app', sha));
    expect(await cache(2).evict()).toEqual([]);
    expect(app.snapshots.list()).toHaveLength(4);
    const [oldestHeld, second, third, newest] = opened as [Snapshot, Snapshot, Snapshot, Snapshot];
    await second.release();
    await third.release();
    // Releasing lets the budget take the released ones (the oldest held one stays).
    await cache(2).evict();
    expect(app.snapshots.list().map((entry) => entry.sha).sort()).toEqual([oldestHeld.sha, newest.sha].sort());
    expect(existsSync(oldestHeld.path)).toBe(true);
    expect(existsSync(second.path)).toBe(false);
    expect(existsSync(third.path)).toBe(false);
    // A snapshot used again moves to the front of the queue.
    const again = await app.snapshots.open('app', oldestHeld.sha);
    await oldestHeld.release();
    await newest.release();
    expect((await cache(1).evict()).map((entry) => entry.sha)).toEqual([newest.sha]);
    expect(app.snapshots.list().map((entry) => entry.sha)).toEqual([oldestHeld.sha]);
    await again.release();
    await cache(1).evict();
    await cache(0).evict();
    expect(app.snapshots.list()).toEqual([]);
    expect(readdirSync(dirname(oldestHeld.path))).toEqual([]);
  });

  it('serves the last synced commit marked stale when the lease is held elsewhere', async () => {
    const synced = (await app.snapshots.open('app', 'main', { sync: true })).sha;
    const newer = upstream.commit('main');
    const other = await openLeaseManager(app.config.leaseUrl);
    const source = await app.replication.getSource('app');
    const lease = await other.acquire(syncLeaseKey(source.id), { ttlMs: 30_000, owner: 'other worker' });
    try {
      const stale = await app.snapshots.open('app', 'main', { sync: true, waitMs: 300 });
      expect(stale.stale).toBe(true);
      expect(stale.sha).toBe(synced);
      expect(newer).not.toBe(synced);
      await stale.release();
    } finally {
      await lease.release();
      await other.close();
    }
  });

  it('joins the sync in flight when the lease comes free within waitMs', async () => {
    await app.snapshots.open('app', 'main', { sync: true });
    const newer = upstream.commit('main');
    const other = await openLeaseManager(app.config.leaseUrl);
    const source = await app.replication.getSource('app');
    const lease = await other.acquire(syncLeaseKey(source.id), { ttlMs: 30_000, owner: 'other worker' });
    setTimeout(() => void lease.release(), 400);
    try {
      const fresh = await app.snapshots.open('app', 'main', { sync: true, waitMs: 10_000 });
      expect(fresh.stale).toBe(false);
      expect(fresh.sha).toBe(newer);
    } finally {
      await other.close();
    }
  });

  it('falls back to one temporary clone when there is no mirror yet and its first sync is held elsewhere', async () => {
    const fresh = Upstream.create(undefined, 'fresh.git');
    const sha = fresh.commit('main');
    await app.replication.addSource({ url: fresh.bare, name: 'fresh' });
    const source = await app.replication.getSource('fresh');
    const other = await openLeaseManager(app.config.leaseUrl);
    const lease = await other.acquire(syncLeaseKey(source.id), { ttlMs: 30_000, owner: 'first clone' });
    try {
      const snapshot = await app.snapshots.open('fresh', 'main', { waitMs: 200 });
      expect(snapshot.toJSON()).toMatchObject({ sha, stale: false, temporaryClone: true });
      expectExactly(snapshot, fresh.bare);
      expect(existsSync(mirrorPathFor(app.config.mirrorsDir, source, fresh.bare))).toBe(false);
      expect(readdirSync(join(app.config.snapshotsDir, '.clones'))).toEqual([]);
    } finally {
      await lease.release();
      await other.close();
    }
  });

  it('reads files and trees of any commit without materialising', async () => {
    const sha = upstream.commit('main', 2);
    await app.replication.sync('app');
    const names = treeOf(upstream.bare, sha);
    const first = names[0] as string;
    expect((await app.snapshots.readFileAt('app', sha, first)).toString()).toBe(git(upstream.bare, 'cat-file', 'blob', `${sha}:${first}`) + '\n');
    expect((await app.snapshots.readFileAt('app', 'main', first)).toString()).toContain('main');
    const entries = await app.snapshots.listTree('app', sha);
    expect(entries.map((entry) => entry.name).sort()).toEqual(names);
    expect(entries.every((entry) => entry.type === 'blob' && /^[0-9a-f]{40}$/.test(entry.oid))).toBe(true);
    await expect(app.snapshots.readFileAt('app', sha, 'nope.txt')).rejects.toBeInstanceOf(PathNotFoundError);
    await expect(app.snapshots.readFileAt('app', 'no-such-branch', first)).rejects.toBeInstanceOf(RevisionNotFoundError);
    // A reader process that dies is replaced on the next read.
    execFileSync('pkill', ['-f', '--', `--git-dir=${mirror()} cat-file --batch-command`]);
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect((await app.snapshots.readFileAt('app', sha, first)).length).toBeGreaterThan(0);
    expect(readdirSync(app.config.dataDir)).not.toContain('snapshots');
  });

  it('refuses refs and paths that leave the repository, and symlinks pointing outside the snapshot', async () => {
    for (const ref of ['../../etc', 'main:file', 'main..other', '-x', '--output=/tmp/x', 'a b', 'main^', '@{-1}', '']) {
      await expect(app.snapshots.open('app', ref), ref).rejects.toBeInstanceOf(InvalidSnapshotRequestError);
    }
    await expect(app.snapshots.readFileAt('app', 'main', '../x')).rejects.toBeInstanceOf(InvalidSnapshotRequestError);
    await expect(app.snapshots.readFileAt('app', 'main', '/etc/passwd')).rejects.toBeInstanceOf(InvalidSnapshotRequestError);

    writeFileSync(join(upstream.work, 'inside.txt'), 'inside\n');
    symlinkSync('/etc/passwd', join(upstream.work, 'escape'));
    symlinkSync('../../../../../../../../etc', join(upstream.work, 'up'));
    symlinkSync('inside.txt', join(upstream.work, 'ok-link'));
    git(upstream.work, 'add', '-A');
    git(upstream.work, 'commit', '-q', '-m', 'links');
    git(upstream.work, 'push', '-q', 'origin', 'main');
    const snapshot = await app.snapshots.open('app', 'main', { sync: true });
    expect(snapshot.resolve('ok-link')).toBe(join(snapshot.path, 'inside.txt'));
    expect((await snapshot.readFile('ok-link')).toString()).toBe('inside\n');
    expect(() => snapshot.resolve('escape')).toThrow(SnapshotPathEscapeError);
    expect(() => snapshot.resolve('up/passwd')).toThrow(SnapshotPathEscapeError);
    expect(() => snapshot.resolve('../app')).toThrow(SnapshotPathEscapeError);
    expect(() => snapshot.resolve('/etc/passwd')).toThrow(SnapshotPathEscapeError);
    expect(snapshot.resolve('new/file')).toBe(join(snapshot.path, 'new/file'));
    await snapshot.release();
  });
  describe('byte budget of held snapshots', () => {
    /** Two commits of equal size (`bytes` each); only one of them fits the budget `maxBytes` when held. */
    async function twoCommits(): Promise<{ a: string; b: string; bytes: number }> {
      const a = commitSized(upstream, 4000, 'a');
      const b = commitSized(upstream, 4000, 'b');
      await app.replication.sync('app');
      const bytes = treeBytes(upstream.bare, a);
      expect(treeBytes(upstream.bare, b)).toBe(bytes);
      return { a, b, bytes };
    }

    it('refuses a hold that would take held snapshots over the budget, leaving nothing behind, and takes it after a release', async () => {
      const { a, b, bytes } = await twoCommits();
      // Room for one of them held, not two.
      const maxBytes = 2 * bytes - 1;
      const { app: tight } = await openTestForgesync({ ...app.config, snapshotMaxBytes: maxBytes });
      try {
        const first = await tight.snapshots.open('app', a, { holdMs: 60_000, owner: 'cli' });
        // A second hold of a held snapshot adds no bytes: counted once, it is allowed.
        const again = await tight.snapshots.open('app', a);
        const before = snapshotFiles(tight.config.snapshotsDir);

        const refused = await tight.snapshots.open('app', b, { holdMs: 60_000 }).catch((error: unknown) => error);
        expect(refused).toBeInstanceOf(SnapshotBudgetExceededError);
        expect(refused).toMatchObject({ sha: b, bytes, heldBytes: bytes, maxBytes });
        const message = (refused as Error).message;
        expect(message).toContain(`held snapshots already take ${formatBytes(bytes)} of the ${formatBytes(maxBytes)} FORGESYNC_SNAPSHOT_MAX_BYTES allows`);
        expect(message).toContain('forgesync snapshot release <handle>');
        expect(message).toContain('raise FORGESYNC_SNAPSHOT_MAX_BYTES');
        // Nothing made, nothing held: no directory, record, index, temp directory or hold file of b.
        expect(snapshotFiles(tight.config.snapshotsDir)).toEqual(before);
        expect(tight.snapshots.list().map((entry) => entry.sha)).toEqual([a]);
        expect(snapshotHolds(tight).live().map((hold) => hold.sha)).toEqual([a, a]);

        await first.release();
        // Still held by `again`: b is still refused.
        await expect(tight.snapshots.open('app', b)).rejects.toBeInstanceOf(SnapshotBudgetExceededError);
        await again.release();
        const second = await tight.snapshots.open('app', b, { holdMs: 60_000 });
        expectExactly(second, upstream.bare);
        // The unheld snapshot of a is evicted to make room, as before (by the pass holding b started).
        const shas = () => tight.snapshots.list().map((entry) => entry.sha);
        await eventually('the unheld snapshot of a to be evicted', () => shas().length === 1);
        expect(shas()).toEqual([b]);
        // And an unheld snapshot on disk counts too once it would be held again.
        await expect(tight.snapshots.open('app', a)).rejects.toBeInstanceOf(SnapshotBudgetExceededError);
        await second.release();
      } finally {
        await tight.close();
      }
    });

    it('gives the last room to exactly one of two instances asking for different commits at the same moment', async () => {
      const { a, b, bytes } = await twoCommits();
      const config = { ...app.config, snapshotMaxBytes: 2 * bytes - 1 };
      const [{ app: one }, { app: two }] = await Promise.all([openTestForgesync(config), openTestForgesync(config)]);
      try {
        const results = await Promise.allSettled([one.snapshots.open('app', a), two.snapshots.open('app', b)]);
        const fulfilled = results.filter((result) => result.status === 'fulfilled');
        const rejected = results.filter((result): result is PromiseRejectedResult => result.status === 'rejected');
        expect(fulfilled).toHaveLength(1);
        expect(rejected).toHaveLength(1);
        expect(rejected[0]?.reason).toBeInstanceOf(SnapshotBudgetExceededError);
        // The loser left nothing: one snapshot on disk, one hold.
        expect(one.snapshots.list()).toHaveLength(1);
        expect(snapshotHolds(one).live()).toHaveLength(1);
      } finally {
        await Promise.all([one.close(), two.close()]);
      }
    });

    it('refuses a temporary clone over the budget and deletes the clone', async () => {
      const fresh = Upstream.create(undefined, 'fresh.git');
      fresh.commit('main');
      await app.replication.addSource({ url: fresh.bare, name: 'fresh' });
      const source = await app.replication.getSource('fresh');
      const { app: tight } = await openTestForgesync({ ...app.config, snapshotMaxBytes: 1 });
      const other = await openLeaseManager(app.config.leaseUrl);
      const lease = await other.acquire(syncLeaseKey(source.id), { ttlMs: 30_000, owner: 'first clone' });
      try {
        await expect(tight.snapshots.open('fresh', 'main', { waitMs: 200 })).rejects.toBeInstanceOf(SnapshotBudgetExceededError);
        expect(readdirSync(join(tight.config.snapshotsDir, '.clones'))).toEqual([]);
        expect(tight.snapshots.list()).toEqual([]);
        expect(snapshotHolds(tight).live()).toEqual([]);
      } finally {
        await lease.release();
        await other.close();
        await tight.close();
      }
    });
  });
});
