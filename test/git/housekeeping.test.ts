import { execFile, execFileSync, spawn } from 'node:child_process';
import { existsSync, readdirSync, statSync, utimesSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterEach, describe, expect, it } from 'vitest';
import { housekeepMirror, measureMirror, LOOSE_OBJECTS_LIMIT, type HousekeepingPolicy, type HousekeepingRun } from '../../src/git/housekeeping.js';
import { syncMirror, type MirrorSyncResult } from '../../src/git/mirror.js';
import { GitRunner } from '../../src/git/runner.js';
import { servedViewOf } from '../../src/git/served-view.js';
import { loopbackEgress } from '../support/egress.js';
import { FIXTURE_ENV, git, plantLock, refsOf, removeTempDirs, tempDir, Upstream } from '../support/git-fixtures.js';
import { STALE_LOCK_AGE_MS } from '../../src/git/locks.js';

const HOUR = 3_600_000;
const policy: HousekeepingPolicy = { intervalMs: HOUR, pruneGraceMs: HOUR, fullRepackIntervalMs: 7 * 24 * HOUR };

function setup() {
  const root = tempDir();
  const upstream = Upstream.create(root, 'project');
  const runner = new GitRunner({ protocols: new Set(['file']), egress: loopbackEgress() });
  const sync = () => syncMirror({ runner, storage: join(root, 'mirrors'), id: 1, name: 'project', url: upstream.bare });
  const housekeep = (synced: MirrorSyncResult, options: { now?: number; policy?: HousekeepingPolicy } = {}) =>
    housekeepMirror({ runner, mirror: synced.path, checksum: synced.checksum, refChanges: synced.refChanges, policy: options.policy ?? policy, ...(options.now !== undefined ? { now: options.now } : {}) });
  return { root, upstream, runner, sync, housekeep };
}

const tasksOf = (run: HousekeepingRun) => run.outcomes.map((outcome) => `${outcome.task}:${outcome.result}`);
const packFiles = (mirror: string) => readdirSync(join(mirror, 'objects', 'pack')).sort();

/** Clones `repo` (bare, over git's own transport, not hard links) and returns the clone's progress output. */
async function cloneOf(repo: string, into: string): Promise<string> {
  const { stderr } = await promisify(execFile)('git', ['clone', '--bare', '--no-local', '--progress', repo, into], { env: FIXTURE_ENV });
  return stderr;
}

/** Writes a blob nothing refers to into `repo`, as a loose object last written at `mtimeMs`; returns its id. */
function writeOrphan(repo: string, content: string, mtimeMs: number): string {
  const sha = execFileSync('git', ['--git-dir', repo, 'hash-object', '-w', '--stdin'], { env: FIXTURE_ENV, input: content, encoding: 'utf8' }).trim();
  utimesSync(join(repo, 'objects', sha.slice(0, 2), sha.slice(2)), new Date(mtimeMs), new Date(mtimeMs));
  return sha;
}

/** Whether `sha` is an object of `repo`. */
function hasObject(repo: string, sha: string): boolean {
  try {
    git(repo, 'cat-file', '-e', sha);
    return true;
  } catch {
    return false;
  }
}

afterEach(() => removeTempDirs());

describe('mirror housekeeping', () => {
  it('packs what a push every few seconds leaves (loose objects, loose refs) into bitmapped packs, and clones through the served view use the bitmap', async () => {
    const { root, upstream, sync, housekeep } = setup();
    const first = await sync();
    // A fresh clone is one pack without a bitmap: the first look writes the midx, its bitmap and a commit-graph.
    expect(tasksOf(await housekeep(first))).toEqual(['geometric-repack:done', 'commit-graph:done']);
    expect(packFiles(first.path).some((file) => /^multi-pack-index-.*\.bitmap$/.test(file))).toBe(true);

    const ran: string[][] = [];
    let most = 0;
    for (let push = 0; push < 40; push++) {
      upstream.commit(`push ${push}`);
      upstream.branch(`topic-${push}`);
      upstream.publish();
      const run = await housekeep(await sync());
      most = Math.max(most, run.previous?.looseObjects ?? 0);
      if (run.outcomes.length > 0) ran.push(tasksOf(run));
    }
    // Each small fetch leaves a few loose objects and a loose ref: past 100 objects a geometric
    // repack packs them, past 16 refs (a small packed-refs) pack-refs packs those.
    expect(ran.filter((tasks) => tasks.includes('geometric-repack:done'))).toHaveLength(1);
    expect(ran.filter((tasks) => tasks.includes('pack-refs:done')).length).toBeGreaterThanOrEqual(2);
    expect(ran.flat().filter((task) => task.endsWith(':failed'))).toEqual([]);
    const measure = measureMirror((await sync()).path);
    expect(measure.looseObjects).toBeLessThan(LOOSE_OBJECTS_LIMIT);
    expect(most).toBeLessThan(LOOSE_OBJECTS_LIMIT + 10);
    expect(measure).toMatchObject({ bitmap: true, commitGraph: true, cruftPacks: 0 });
    expect(measure.packs).toBeLessThanOrEqual(3);
    expect(measure.looseRefs).toBeLessThan(16);

    // 120 new refs in one sync: pack-refs runs at once.
    for (let tag = 0; tag < 120; tag++) upstream.tag(`v0.${tag}`);
    upstream.publish();
    const tagged = await sync();
    expect(measureMirror(tagged.path).looseRefs).toBeGreaterThanOrEqual(120);
    expect(tasksOf(await housekeep(tagged))).toContain('pack-refs:done');
    expect(measureMirror(tagged.path).looseRefs).toBe(0);
    expect(refsOf(tagged.path)).toEqual(upstream.refs());

    // upload-pack in the served view reads the mirror's packs through its alternates, bitmap included:
    // objects are sent verbatim from the bitmapped pack ("pack-reused"), which git does only with a bitmap.
    const progress = await cloneOf(servedViewOf(tagged.path), join(root, 'clone.git'));
    expect(Number(/pack-reused (\d+)/.exec(progress)?.[1] ?? 0)).toBeGreaterThan(0);
    expect(refsOf(join(root, 'clone.git'))).toEqual(upstream.refs());
  });

  it('runs nothing, and touches no pack, when the mirror is tidy', async () => {
    const { upstream, sync, housekeep } = setup();
    upstream.commit('second');
    upstream.publish();
    const synced = await sync();
    await housekeep(synced);
    const packs = packFiles(synced.path);
    const mtimes = packs.map((file) => statSync(join(synced.path, 'objects', 'pack', file)).mtimeMs);

    const again = await housekeep(await sync());
    const later = await housekeep(await sync(), { now: Date.now() + 2 * HOUR });

    expect(again.outcomes).toEqual([]);
    expect(later.outcomes).toEqual([]);
    expect(packFiles(synced.path)).toEqual(packs);
    expect(packs.map((file) => statSync(join(synced.path, 'objects', 'pack', file)).mtimeMs)).toEqual(mtimes);
  });

  it('removes the locks a killed housekeeping git left (which would fail every later run), and only old ones', async () => {
    const { upstream, sync, housekeep } = setup();
    const mirror = (await sync()).path;
    const midxLock = plantLock(mirror, 'objects/pack/multi-pack-index.lock', STALE_LOCK_AGE_MS + 60_000);
    const graphLock = plantLock(mirror, 'objects/info/commit-graphs/commit-graph-chain.lock', STALE_LOCK_AGE_MS + 60_000);
    // A SIGKILLed repack's temporary pack (as large as the repository, and never removed by git) and a fresh one.
    const killedPack = plantLock(mirror, 'objects/pack/.tmp-4242-pack-0123.pack', 11 * 60_000);
    const writing = plantLock(mirror, 'objects/pack/tmp_pack_AbC123', 60_000);
    upstream.commit('second');
    upstream.publish();

    const run = await housekeep(await sync());

    expect(tasksOf(run)).toEqual(expect.arrayContaining(['geometric-repack:done', 'commit-graph:done']));
    expect(tasksOf(run).filter((task) => task.endsWith(':failed'))).toEqual([]);
    expect(run.staleLocks.map((lock) => lock.path).sort()).toEqual(['objects/info/commit-graphs/commit-graph-chain.lock', 'objects/pack/.tmp-4242-pack-0123.pack', 'objects/pack/multi-pack-index.lock']);
    expect(existsSync(midxLock) || existsSync(graphLock) || existsSync(killedPack)).toBe(false);
    expect(existsSync(writing)).toBe(true);

    // A fresh lock may be a live git's: left alone, and the task that needs it fails (reported, not thrown).
    plantLock(mirror, 'packed-refs.lock', 1000);
    upstream.commit('third', 'another');
    upstream.publish();
    const locked = await housekeep(await sync(), { now: Date.now() + 2 * HOUR });
    expect(tasksOf(locked)).toContain('pack-refs:failed');
    expect(locked.outcomes.find((outcome) => outcome.task === 'pack-refs')?.error).toMatch(/pack-refs --all failed/);
  });

  it('retains the old tips a sync made unreachable (force-push, deletion, moved tag), not those of a fast-forward', async () => {
    const { upstream, sync, housekeep } = setup();
    upstream.tag('v1', true);
    upstream.commit('on feature', 'feature');
    upstream.checkout('main');
    upstream.publish();
    await housekeep(await sync());
    upstream.commit('fast-forward');
    upstream.publish();
    expect((await housekeep(await sync())).retained).toBe(0);

    upstream.rewrite();
    upstream.deleteBranch('feature');
    upstream.deleteTag('v1');
    upstream.tag('v1', true);
    upstream.publish();
    const moved = await sync();
    expect(moved.refChanges.map((change) => change.ref)).toEqual(['refs/heads/feature', 'refs/heads/main', 'refs/tags/v1']);
    expect((await housekeep(moved)).retained).toBe(3);
  });

  it('prunes unreachable objects only past the grace period, keeping those of tips served within it', async () => {
    const { upstream, sync, housekeep } = setup();
    const t0 = Date.now();
    const fullOften: HousekeepingPolicy = { ...policy, fullRepackIntervalMs: 60_000 };
    const mirror = (await sync()).path;
    await housekeep(await sync(), { now: t0, policy: fullOften });
    const doomed = upstream.commit('doomed', 'doomed');
    upstream.checkout('main');
    upstream.publish();
    await housekeep(await sync(), { now: t0 + 1000, policy: fullOften });
    upstream.deleteBranch('doomed');
    upstream.publish();
    // The sync that deleted the branch: its tip was served until now (t0 + 90 min).
    const deleted = await housekeep(await sync(), { now: t0 + 1.5 * HOUR, policy: fullOften });
    expect(deleted.retained).toBe(1);
    // Two objects nothing reaches: one written a month ago, one "recently" (within the grace at t0 + 2 h).
    const old = writeOrphan(mirror, 'written a month ago', t0 - 30 * 24 * HOUR);
    const young = writeOrphan(mirror, 'written within the grace period', t0 + 1.5 * HOUR);

    upstream.commit('moves main');
    upstream.publish();
    const full = await housekeep(await sync(), { now: t0 + 2 * HOUR, policy: fullOften });

    expect(tasksOf(full)).toEqual(['full-repack:done', 'commit-graph:done']);
    expect(hasObject(mirror, old)).toBe(false);
    expect(hasObject(mirror, young)).toBe(true);
    expect(hasObject(mirror, doomed)).toBe(true);
    expect(full.measure).toMatchObject({ packs: 1, bitmap: true });

    // An hour later both have had their grace period: the next full repack deletes them.
    upstream.commit('moves main again');
    upstream.publish();
    const later = await housekeep(await sync(), { now: t0 + 3 * HOUR + 1000, policy: fullOften });
    expect(tasksOf(later)).toContain('full-repack:done');
    expect(hasObject(mirror, young)).toBe(false);
    expect(hasObject(mirror, doomed)).toBe(false);
    expect(refsOf(mirror)).toEqual(upstream.refs());
  });

  it('prunes nothing within a grace period after refs moved unseen (first look at a mirror)', async () => {
    const { upstream, sync, housekeep } = setup();
    const t0 = Date.now();
    const synced = await sync();
    const orphan = writeOrphan(synced.path, 'a month old, unreachable', t0 - 30 * 24 * HOUR);
    await housekeep(synced, { now: t0, policy: { ...policy, fullRepackIntervalMs: 60_000 } });
    upstream.commit('moves main');
    upstream.publish();

    const within = await housekeep(await sync(), { now: t0 + 0.5 * HOUR, policy: { ...policy, fullRepackIntervalMs: 60_000 } });

    expect(tasksOf(within)).toContain('full-repack:done');
    expect(hasObject(synced.path, orphan)).toBe(true);
  });

  it('leaves readers whole: a clone of the served view and a running cat-file across a full repack that deletes the packs they use', async () => {
    const { root, upstream, sync, housekeep } = setup();
    for (let commit = 0; commit < 60; commit++) upstream.commit(`history ${commit}`);
    upstream.publish();
    const synced = await sync();
    await housekeep(synced);
    const tip = git(synced.path, 'rev-parse', 'refs/heads/main');
    // A reader that opened the packs before they are replaced.
    const catFile = spawn('git', ['--git-dir', synced.path, 'cat-file', '--batch-check'], { env: FIXTURE_ENV });
    const answers: string[] = [];
    catFile.stdout.setEncoding('utf8').on('data', (text: string) => answers.push(text));
    catFile.stdin.write(`${tip}\n`);
    const before = packFiles(synced.path);

    upstream.commit('one more');
    upstream.publish();
    const moved = await sync();
    const [progress, run] = await Promise.all([
      cloneOf(servedViewOf(moved.path), join(root, 'during.git')),
      housekeep(moved, { now: Date.now() + 8 * 24 * HOUR }),
    ]);
    catFile.stdin.end(`${git(upstream.bare, 'rev-parse', 'HEAD~30')}\n`);
    await new Promise((done) => catFile.on('close', done));

    expect(tasksOf(run)).toContain('full-repack:done');
    expect(before.filter((file) => existsSync(join(moved.path, 'objects', 'pack', file)))).not.toEqual(before);
    expect(progress).toMatch(/Total \d+/);
    expect(refsOf(join(root, 'during.git'))).toEqual(upstream.refs());
    expect(answers.join('')).toMatch(new RegExp(`^${tip} commit \\d+\\n[0-9a-f]{40} commit \\d+\\n$`));
  });
});
