import { execFile } from 'node:child_process';
import { chmod, copyFile, lstat, mkdir, mkdtemp, rename, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { TEMP_PREFIX } from '../git/paths.js';
import type { GitRunner } from '../git/runner.js';
import { linkTree } from './link.js';

const run = promisify(execFile);

/** What a materialised snapshot holds. */
export interface ExportStats {
  /** Files and symlinks. */
  files: number;
  /** Sum of their sizes as stored in git. */
  bytes: number;
  /** The commit whose snapshot it was derived from; null for a full export. */
  derivedFrom?: string | null;
}

/** A materialised snapshot a new one can be derived from. */
export interface ExportBase {
  sha: string;
  path: string;
  /** The paths whose entries differ between the base's tree and the new one (`diff-tree -r --name-only`). */
  changed?: string[];
}

/** The index file kept beside a snapshot: what lets another commit be derived from it. */
export function indexFileOf(snapshotPath: string): string {
  return `${snapshotPath}.index`;
}

/** What exportCommit exports, and where. */
export interface ExportRequest {
  runner: GitRunner;
  /** The repository holding the commit (a mirror, or a temporary clone). */
  gitDir: string;
  sha: string;
  /** The snapshot's directory, made by renaming a finished export into place. */
  target: string;
  /** Where the temporary export directory is made (the source's snapshot directory). */
  parent: string;
  /** A materialised commit of the same source to derive from. */
  base?: ExportBase | undefined;
  /** The tree's files and bytes when the caller measured them already (measureTree): not read twice. */
  measured?: ExportStats | undefined;
}

/**
 * Writes exactly the tree of commit `sha` of `gitDir` into `target` (which must
 * not exist), read-only, and keeps the index that describes it beside it. The
 * work happens in a temporary directory beside `target` with an index file of
 * its own (the mirror is never written to) renamed into place at the end, so
 * `target` either does not exist or is complete.
 *
 * An export rather than a `git worktree`: the result holds no `.git` link and
 * depends on nothing in the mirror afterwards, so a re-clone or
 * `git gc --prune=now` of the mirror cannot touch it.
 *
 * With a `base` (a materialised commit of the same source), the snapshot is
 * derived from it: its files are hard-linked (snapshots are read-only, never
 * modified, so they can share them), then git's two-tree `read-tree -m -u`
 * replaces only what differs, by unlinking and writing anew, never in place.
 * Creating tens of thousands of files is what a checkout costs; linking them is
 * several times cheaper. If git refuses (it checks every path it changes), the
 * full export runs instead.
 */
export async function exportCommit(request: ExportRequest): Promise<ExportStats> {
  if (request.base) {
    try {
      return { ...(await materialise(request, request.base)), derivedFrom: request.base.sha };
    } catch {
      // A base git would not update (or that vanished): a full export is always correct.
    }
  }
  return { ...(await materialise(request, undefined)), derivedFrom: null };
}

async function materialise(request: ExportRequest, base: ExportBase | undefined): Promise<ExportStats> {
  const { runner, gitDir, sha, target, parent, measured } = request;
  await mkdir(parent, { recursive: true });
  const temp = await mkdtemp(join(parent, `${TEMP_PREFIX}export-`));
  try {
    const tree = join(temp, 'tree');
    const index = join(temp, 'index');
    if (base) {
      await linkTree(base.path, tree);
      await copyFile(indexFileOf(base.path), index);
      // Git writes only in the directories holding what changes: those alone are made
      // writable (directories only: files are shared with the base and stay read-only).
      if (base.changed) await chmodEach(tree, parentsOf(base.changed), 'u+w');
      else await run('find', [tree, '-type', 'd', '-exec', 'chmod', 'u+w', '--', '{}', '+']);
    } else {
      await mkdir(tree);
    }
    const [, stats] = await Promise.all([
      runner.run(
        [
          `--git-dir=${gitDir}`,
          `--work-tree=${tree}`,
          // Parallel checkout: workers = number of cores.
          '-c',
          'checkout.workers=0',
          '-c',
          'core.symlinks=true',
          // Linking a file changes its ctime, nothing else: the base's index still describes it.
          '-c',
          'core.trustctime=false',
          'read-tree',
          '-m',
          '-u',
          '--end-of-options',
          ...(base ? [base.sha, sha] : [sha]),
        ],
        { indexFile: index, cwd: temp },
      ),
      measured ? { files: measured.files, bytes: measured.bytes } : measureTree(runner, gitDir, sha),
    ]);
    // After a derivation only the changed paths and their directories can be writable.
    if (base?.changed) await chmodEach(tree, [...base.changed, ...parentsOf(base.changed)], 'a-w');
    else await makeReadOnly(tree);
    await rename(tree, target);
    await rename(index, indexFileOf(target));
    return stats;
  } finally {
    await removeTree(temp);
  }
}

/**
 * Deletes a snapshot directory (read-only inside) or a temp directory; missing is
 * fine. Only directories are made writable, which is all unlinking needs: files
 * may be shared with other snapshots and must stay read-only there.
 */
export async function removeTree(path: string): Promise<void> {
  try {
    await run('find', [path, '-type', 'd', '-exec', 'chmod', 'u+w', '--', '{}', '+']);
  } catch {
    // missing, or already writable: rm tells
  }
  await rm(path, { recursive: true, force: true });
}

/** Every directory holding one of `paths` ('' for the root), deepest last. */
function parentsOf(paths: string[]): string[] {
  const parents = new Set<string>(['']);
  for (const path of paths) {
    for (let slash = path.indexOf('/'); slash !== -1; slash = path.indexOf('/', slash + 1)) parents.add(path.slice(0, slash));
  }
  return [...parents];
}

/**
 * Adds or removes write permission (`u+w` / `a-w`) on each of `paths` under
 * `root` that exists and is not a symlink; one syscall each, for the few
 * paths a derivation touches.
 */
async function chmodEach(root: string, paths: string[], change: 'u+w' | 'a-w'): Promise<void> {
  for (const path of paths) {
    const full = path === '' ? root : join(root, path);
    const stat = await lstat(full).catch(() => undefined);
    if (!stat || stat.isSymbolicLink()) continue;
    await chmod(full, change === 'u+w' ? stat.mode | 0o200 : stat.mode & ~0o222);
  }
}

async function makeReadOnly(path: string): Promise<void> {
  // One find walks tens of thousands of entries in C, without blocking the event loop, and
  // changes only what is still writable: files linked from a base already are not, and an
  // inode needlessly chmod-ed is one more journal write.
  await run('find', [path, '-perm', '/222', '!', '-type', 'l', '-exec', 'chmod', 'a-w', '--', '{}', '+']);
}

/**
 * Files and bytes of a commit's tree, from `ls-tree`, before or beside the
 * checkout: what the snapshot will take, as the cache counts it, known before
 * anything is written. Only sizes are printed, a few bytes per entry, so even a
 * tree of millions of files stays far below the runner's output cap.
 */
export async function measureTree(runner: GitRunner, gitDir: string, sha: string): Promise<ExportStats> {
  const { stdout } = await runner.run([`--git-dir=${gitDir}`, 'ls-tree', '-r', '--full-tree', '--format=%(objectsize)', '--end-of-options', sha]);
  let files = 0;
  let bytes = 0;
  for (const line of stdout.split('\n')) {
    if (line === '') continue;
    files++;
    // Submodules print `-`: nothing of theirs is written.
    const size = Number(line);
    if (Number.isFinite(size)) bytes += size;
  }
  return { files, bytes };
}
