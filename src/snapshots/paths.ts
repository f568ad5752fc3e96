import { lstatSync, realpathSync } from 'node:fs';
import { join, relative, sep, isAbsolute } from 'node:path';
import { safeJoin, sourceDirName, type DirOwner } from '../git/paths.js';
import { normalisedUrl } from '../git/storage.js';
import { shown } from '../util/shown.js';
import { SnapshotPathEscapeError } from './errors.js';
import { isObjectId } from './revision.js';

/** Directory name of one source's snapshots: `<id>-<sanitized-name>-<sha256(url)[:12]>`, like its mirror. */
export function snapshotSourceDirName(owner: DirOwner, url: string): string {
  return sourceDirName(owner, normalisedUrl(url));
}

/** `<root>/<source dir>/<sha>`, normalised and checked to stay under `root`. */
export function commitDir(root: string, sourceDirName: string, sha: string): string {
  if (!isObjectId(sha)) throw new SnapshotPathEscapeError(sha, 'not a full commit id');
  return safeJoin(root, sourceDirName, sha);
}

/**
 * The absolute path of `path` inside the snapshot directory `root`, for consumers
 * that open files by name: refuses `..` and absolute paths, and any path whose
 * symlinks (at any level) resolve outside the snapshot. The path need not exist;
 * its existing ancestors are checked.
 * @throws SnapshotPathEscapeError
 */
export function resolveInside(root: string, path: string): string {
  if (typeof path !== 'string' || path.includes('\0')) throw new SnapshotPathEscapeError(shown(path), 'not a valid path');
  if (isAbsolute(path)) throw new SnapshotPathEscapeError(path, 'absolute paths are not inside the snapshot');
  const parts = path.split(/[\\/]+/).filter((part) => part !== '' && part !== '.');
  if (parts.includes('..')) throw new SnapshotPathEscapeError(path, '".." leaves the snapshot');
  const realRoot = realpathSync(root);
  const target = join(realRoot, ...parts);
  // The deepest existing ancestor, resolved through every symlink, must stay inside.
  let existing = target;
  for (;;) {
    try {
      lstatSync(existing);
      break;
    } catch {
      const parent = join(existing, '..');
      if (parent === existing || !inside(realRoot, parent)) break;
      existing = parent;
    }
  }
  let real: string;
  try {
    real = realpathSync(existing);
  } catch (error) {
    // A link to nothing, or a loop of links (a commit may hold either): no file to hand out.
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' || code === 'ELOOP' || code === 'ENOTDIR') throw new SnapshotPathEscapeError(path, 'a symlink on the path leads nowhere (a link to nothing or a loop)');
    throw error;
  }
  if (!inside(realRoot, real)) throw new SnapshotPathEscapeError(path, 'a symlink on it points outside the snapshot');
  return existing === target ? real : join(real, relative(existing, target));
}

function inside(root: string, path: string): boolean {
  const rel = relative(root, path);
  return rel === '' || (!rel.startsWith(`..${sep}`) && rel !== '..' && !isAbsolute(rel));
}
