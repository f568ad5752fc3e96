import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { GitCommandError } from '../../src/git/errors.js';
import { localRefs, STALE_LOCK_AGE_MS, syncMirror, type RemovedLock } from '../../src/git/mirror.js';
import { countingRunner } from '../support/counting-runner.js';
import { plantLock, removeTempDirs, tempDir, Upstream } from '../support/git-fixtures.js';

/**
 * A git killed mid-update (SIGKILLed worker, lost lease, timeout) leaves its
 * `*.lock` files behind; these tests plant such files in a real mirror, the
 * way a killed `git fetch --atomic` leaves them, and sync it again.
 */
function setup() {
  const root = tempDir();
  const storage = join(root, 'mirrors');
  const upstream = Upstream.create(root, 'project');
  const { runner } = countingRunner(new Set(['file']));
  const removed: RemovedLock[] = [];
  const sync = () => syncMirror({ runner, storage, id: 1, name: 'project', url: upstream.bare, onStaleLock: (lock) => removed.push(lock) });
  return { upstream, runner, removed, sync };
}

afterEach(() => removeTempDirs());

describe('stale git locks in a mirror', () => {
  it('removes locks older than the safety age before fetching, and the sync succeeds', async () => {
    const { upstream, runner, removed, sync } = setup();
    const { path } = await sync();
    upstream.commit('moves main');
    upstream.publish();
    const old = STALE_LOCK_AGE_MS + 5_000;
    const refLock = plantLock(path, 'refs/heads/main.lock', old);
    const packedLock = plantLock(path, 'packed-refs.lock', old);
    // Outside refs/ and the named top-level files: not ours to judge, left alone.
    const objectsLock = plantLock(path, 'objects/info/stray.lock', old);

    const result = await sync();

    expect(result).toMatchObject({ action: 'fetched', verified: true });
    expect(await localRefs(runner, path)).toEqual(upstream.refs());
    expect(existsSync(refLock)).toBe(false);
    expect(existsSync(packedLock)).toBe(false);
    expect(existsSync(objectsLock)).toBe(true);
    expect(removed.map((lock) => lock.path).sort()).toEqual(['packed-refs.lock', 'refs/heads/main.lock']);
    expect(removed.every((lock) => lock.ageMs >= STALE_LOCK_AGE_MS)).toBe(true);
  });

  it('leaves a fresh lock alone: it may belong to a git still running, so the fetch fails with git\'s message', async () => {
    const { upstream, removed, sync } = setup();
    const { path } = await sync();
    upstream.commit('moves main');
    upstream.publish();
    // Well within the safety age, as a lock an orphaned but live git just took would be.
    const lock = plantLock(path, 'refs/heads/main.lock', 1_000);

    const failure = await sync().catch((error: unknown) => error);

    expect(failure).toBeInstanceOf(GitCommandError);
    // The message keeps git's last lines ("may have crashed in this repository earlier"), stderr all of them.
    expect((failure as GitCommandError).message).toMatch(/crashed in this repository/);
    expect((failure as GitCommandError).stderr).toMatch(/Unable to create '[^']*refs\/heads\/main\.lock': File exists/);
    expect(existsSync(lock)).toBe(true);
    expect(removed).toEqual([]);
  });
});
