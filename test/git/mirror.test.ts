import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { RemoteNotFoundError } from '../../src/git/errors.js';
import { cleanupTempDirs, localRefs, lsRemote, refsChecksum, removeMirror, syncMirror } from '../../src/git/mirror.js';
import { legacyMirrorDirName, mirrorDirName } from '../../src/git/paths.js';
import { countingRunner } from '../support/counting-runner.js';
import { git, refsOf, removeTempDirs, tempDir, Upstream } from '../support/git-fixtures.js';

const protocols = new Set(['file']);

function setup() {
  const root = tempDir();
  const storage = join(root, 'mirrors');
  const upstream = Upstream.create(root, 'project');
  const { runner, calls } = countingRunner(protocols);
  const sync = (url = upstream.bare, name = 'project') => syncMirror({ runner, storage, id: 1, name, url });
  return { root, storage, upstream, runner, calls, sync };
}

const subcommands = (calls: string[][]) => calls.map((args) => args.find((arg) => !arg.startsWith('--git-dir=')));

afterEach(() => {
  vi.restoreAllMocks();
  removeTempDirs();
});

describe('syncMirror', () => {
  it('clones, then follows commits, branches, tags, deletions and force-pushes', async () => {
    const { upstream, runner, sync, storage } = setup();
    const first = await sync();
    expect(first).toMatchObject({ action: 'cloned', verified: true, head: 'refs/heads/main' });
    expect(first.path).toBe(join(storage, mirrorDirName({ id: 1, name: 'project' }, upstream.bare)));
    expect(await localRefs(runner, first.path)).toEqual(upstream.refs());
    expect(first.checksum).toBe(refsChecksum(upstream.refs()));
    expect(first.refsChanged).toBe(1);

    upstream.commit('second');
    upstream.commit('on feature', 'feature');
    upstream.tag('v1');
    upstream.tag('v1-annotated', true);
    upstream.publish();
    const second = await sync();
    expect(second).toMatchObject({ action: 'fetched', verified: true, refsChanged: 4 });
    expect(await localRefs(runner, second.path)).toEqual(upstream.refs());

    upstream.checkout('main');
    upstream.deleteBranch('feature');
    upstream.deleteTag('v1');
    const rewritten = upstream.rewrite();
    upstream.publish();
    const third = await sync();
    expect(third).toMatchObject({ action: 'fetched', verified: true, refsChanged: 3 });
    const refs = await localRefs(runner, third.path);
    expect(refs).toEqual(upstream.refs());
    expect(refs.get('refs/heads/main')).toBe(rewritten);
    expect(refs.has('refs/heads/feature')).toBe(false);
    expect(third.checksum).toBe(third.upstreamChecksum);
  });

  it('does not fetch, nor start any git process, when the upstream shows nothing new', async () => {
    const { sync, calls, upstream } = setup();
    await sync();
    calls.length = 0;
    const result = await sync();
    expect(result).toMatchObject({ action: 'noop', refsChanged: 0, verified: true });
    // A local upstream's refs are read from its files: no ls-remote, no fetch, nothing.
    expect(subcommands(calls)).toEqual([]);

    upstream.commit('new');
    upstream.publish();
    calls.length = 0;
    expect((await sync()).action).toBe('fetched');
    expect(subcommands(calls)).toContain('fetch');
  });

  it('follows a change of the upstream HEAD', async () => {
    const { sync, upstream } = setup();
    upstream.commit('dev work', 'dev');
    upstream.publish();
    await sync();
    upstream.setHead('dev');
    const result = await sync();
    expect(result.action).toBe('fetched');
    expect(result.head).toBe('refs/heads/dev');
    expect(git(result.path, 'symbolic-ref', 'HEAD')).toBe('refs/heads/dev');
  });

  it('re-clones when the source URL changes and removes the old mirror', async () => {
    const { root, sync, storage, runner } = setup();
    const first = await sync();
    const other = Upstream.create(root, 'elsewhere');
    other.commit('only here', 'other-branch');
    other.publish();
    const moved = await sync(other.bare);
    expect(moved).toMatchObject({ action: 'recloned', verified: true, reason: 'the source URL changed' });
    expect(moved.path).not.toBe(first.path);
    expect(existsSync(first.path)).toBe(false);
    expect(await localRefs(runner, moved.path)).toEqual(other.refs());
    expect(readdirSync(storage)).toEqual([mirrorDirName({ id: 1, name: 'project' }, other.bare)]);
  });

  it('re-clones a mirror that records another URL', async () => {
    const { sync, runner, upstream } = setup();
    const first = await sync();
    writeFileSync(join(first.path, 'forgesync-url'), 'https://example.com/someone-else.git\n');
    const again = await sync();
    expect(again).toMatchObject({ action: 'recloned', reason: 'made for another URL', verified: true });
    expect(await localRefs(runner, again.path)).toEqual(upstream.refs());
    expect(readFileSync(join(again.path, 'forgesync-url'), 'utf8').trim()).toBe(upstream.bare);
  });

  it.each([
    ['objects directory deleted', (path: string) => rmSync(join(path, 'objects'), { recursive: true })],
    ['HEAD truncated', (path: string) => writeFileSync(join(path, 'HEAD'), '')],
    ['ref tip object missing', (path: string) => {
      const sha = git(path, 'rev-parse', 'refs/heads/main');
      git(path, 'repack', '-a', '-d', '-q');
      for (const pack of readdirSync(join(path, 'objects', 'pack'))) rmSync(join(path, 'objects', 'pack', pack));
      expect(sha).toMatch(/^[0-9a-f]{40}$/);
    }],
    ['a file instead of a directory', (path: string) => {
      rmSync(path, { recursive: true });
      writeFileSync(path, 'junk');
    }],
  ])('re-clones a corrupt mirror (%s)', async (_label, corrupt) => {
    const { sync, runner, upstream } = setup();
    const first = await sync();
    corrupt(first.path);
    const again = await sync();
    expect(again.action).toBe('recloned');
    expect(again.verified).toBe(true);
    expect(await localRefs(runner, again.path)).toEqual(upstream.refs());
  });

  it('finds a missing inner object only with fsck, then re-clones', async () => {
    const { storage, runner, upstream, sync } = setup();
    upstream.commit('second');
    upstream.publish();
    const first = await sync();
    const packDir = join(first.path, 'objects', 'pack');
    const pack = readdirSync(packDir).find((file) => file.endsWith('.pack')) as string;
    const packed = readFileSync(join(packDir, pack));
    for (const file of readdirSync(packDir)) rmSync(join(packDir, file));
    execFileSync('git', [`--git-dir=${first.path}`, 'unpack-objects', '-q'], { input: packed });
    const oldBlob = git(first.path, 'rev-parse', 'refs/heads/main~1:file.txt');
    rmSync(join(first.path, 'objects', oldBlob.slice(0, 2), oldBlob.slice(2)));

    expect((await sync()).action).toBe('noop');
    const healed = await syncMirror({ runner, storage, id: 1, name: 'project', url: upstream.bare, fsck: true });
    expect(healed).toMatchObject({ action: 'recloned', reason: 'fsck failed', verified: true });
    expect(git(healed.path, 'cat-file', '-t', oldBlob)).toBe('blob');
  });

  it('raises RemoteNotFoundError for a missing upstream and creates nothing', async () => {
    const { root, storage, runner } = setup();
    const missing = join(root, 'no-such-repo.git');
    await expect(syncMirror({ runner, storage, id: 1, name: 'gone', url: missing })).rejects.toBeInstanceOf(RemoteNotFoundError);
    await expect(lsRemote(runner, `file://${missing}`)).rejects.toThrow(/was not found/);
    expect(existsSync(storage) ? readdirSync(storage) : []).toEqual([]);
  });

  it('adopts a mirror named the way it was before directory names carried the source id', async () => {
    const { sync, storage, upstream, calls } = setup();
    const first = await sync();
    const legacy = join(storage, legacyMirrorDirName('project', upstream.bare));
    renameSync(first.path, legacy);
    const before = calls.length;
    const adopted = await sync();
    expect(adopted.action).toBe('noop');
    expect(calls.slice(before).some((args) => args.includes('clone'))).toBe(false);
    expect(readdirSync(storage)).toEqual([mirrorDirName({ id: 1, name: 'project' }, upstream.bare)]);
    expect(existsSync(legacy)).toBe(false);
  });

  it('never mistakes another source\'s mirror for its own, however the names sanitize', async () => {
    const { storage, upstream, runner } = setup();
    const coll = await syncMirror({ runner, storage, id: 1, name: 'coll', url: upstream.bare });
    const dotted = await syncMirror({ runner, storage, id: 2, name: 'coll.', url: upstream.bare });
    expect(coll.path).not.toBe(dotted.path);
    expect(await removeMirror(storage, { id: 2, name: 'coll.' }, upstream.bare)).toBe(true);
    expect(existsSync(dotted.path)).toBe(false);
    expect(existsSync(coll.path)).toBe(true);
    expect((await syncMirror({ runner, storage, id: 1, name: 'coll', url: upstream.bare })).action).toBe('noop');
  });

  it('removes a mirror and cleans up leftover temp directories', async () => {
    const { sync, storage, upstream } = setup();
    const result = await sync();
    mkdirSync(join(storage, '.tmp-abc123'));
    writeFileSync(join(storage, '.tmp-abc123', 'HEAD'), 'ref: refs/heads/main\n');
    expect(await cleanupTempDirs(storage)).toEqual(['.tmp-abc123']);
    expect(readdirSync(storage)).toEqual([mirrorDirName({ id: 1, name: 'project' }, upstream.bare)]);
    expect(await removeMirror(storage, { id: 1, name: 'project' }, upstream.bare)).toBe(true);
    expect(existsSync(result.path)).toBe(false);
    expect(await removeMirror(storage, { id: 1, name: 'project' }, upstream.bare)).toBe(false);
    expect(readdirSync(storage)).toEqual([]);
  });

  it('sanitises hostile names and keeps the mirror inside storage', async () => {
    const { storage, runner, upstream } = setup();
    const result = await syncMirror({ runner, storage, id: 1, name: '../../etc/passwd', url: upstream.bare });
    expect(result.path.startsWith(`${storage}/1-etc-passwd-`)).toBe(true);
    expect(refsOf(result.path)).toEqual(upstream.refs());
  });

  it('reports progress lines when asked', async () => {
    const { storage, runner, upstream } = setup();
    const lines: string[] = [];
    await syncMirror({ runner, storage, id: 1, name: 'p', url: upstream.bare, onProgress: (line) => lines.push(line) });
    expect(lines.some((line) => /Cloning into bare repository/.test(line))).toBe(true);
  });
});
