import { lstatSync, readdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';

/**
 * Age past which a git lock file in a mirror is taken for an orphan. A live
 * git holds a ref transaction's locks (`*.lock` under `refs/`, `packed-refs.lock`,
 * `HEAD.lock`, `config.lock`, `shallow.lock`) for milliseconds, a few seconds
 * at worst when it rewrites a huge packed-refs on a loaded disk. But a worker
 * SIGKILLed on this machine can leave its git (own process group, never
 * killed) running on for a while, and that git may take a lock at any moment:
 * such a lock is fresh and must stay. 30 s is far beyond any live
 * transaction and still heals a stuck source within a retry or two. It is
 * not tied to the lease ttl: the ttl bounds how long a dead holder keeps the
 * source, not how long a running git keeps its locks.
 */
export const STALE_LOCK_AGE_MS = 30_000;

/** The lock files git may leave at the top of a bare repository (everything under `refs/` is walked too). */
const TOP_LEVEL_LOCKS = ['packed-refs.lock', 'HEAD.lock', 'config.lock', 'shallow.lock', 'index.lock'];

export interface RemovedLock {
  /** Path relative to the repository, e.g. `refs/heads/main.lock`. */
  path: string;
  /** How old the lock was (from its mtime) when it was removed. */
  ageMs: number;
}

/**
 * Removes the lock files older than `minAgeMs` that a killed git left in the
 * bare repository `gitDir`, so that the next fetch is not refused with
 * "Unable to create '….lock': File exists" forever. Walks `refs/` and the
 * top-level lock names only (never `objects/`, which is large and whose
 * locks git handles itself). Callers hold the repository's exclusive lease:
 * no other sync of it can be mid-transaction here, only an orphaned git of a
 * dead worker, whose fresh locks `minAgeMs` spares. Symlinks are never
 * followed nor removed; unreadable entries are skipped (git then reports
 * whatever is wrong).
 * @returns the locks removed.
 */
export function removeStaleLocks(gitDir: string, minAgeMs = STALE_LOCK_AGE_MS, now = Date.now()): RemovedLock[] {
  const removed: RemovedLock[] = [];
  const consider = (relative: string) => {
    const full = join(gitDir, relative);
    try {
      const info = lstatSync(full, { throwIfNoEntry: false });
      if (!info?.isFile()) return;
      const ageMs = now - info.mtimeMs;
      if (ageMs < minAgeMs) return;
      // force: another process may have removed it meanwhile (git finishing, or rolling back).
      rmSync(full, { force: true });
      removed.push({ path: relative, ageMs: Math.round(ageMs) });
    } catch {
      // Not removable (permissions): left in place, git's own error then names it and says to remove it.
    }
  };
  for (const name of TOP_LEVEL_LOCKS) consider(name);
  walk(gitDir, 'refs', (relative) => {
    if (relative.endsWith('.lock')) consider(relative);
  });
  return removed;
}

/** Calls `visit` with the path (relative to `root`) of every regular file under `relative`, recursively; symlinks are not followed. */
function walk(root: string, relative: string, visit: (relative: string) => void): void {
  let entries;
  try {
    entries = readdirSync(join(root, relative), { withFileTypes: true });
  } catch {
    return; // no refs/ (not a mirror yet) or unreadable: nothing of ours to clean
  }
  for (const entry of entries) {
    const child = `${relative}/${entry.name}`;
    if (entry.isDirectory()) walk(root, child, visit);
    else if (entry.isFile()) visit(child);
  }
}
