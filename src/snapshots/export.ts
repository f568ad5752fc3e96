import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, rename, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { TEMP_PREFIX } from '../git/paths.js';
import type { GitRunner } from '../git/runner.js';

const run = promisify(execFile);

/** What a materialised snapshot holds. */
export interface ExportStats {
  /** Files and symlinks. */
  files: number;
  /** Sum of their sizes as stored in git. */
  bytes: number;
}

/**
 * Writes exactly the tree of commit `sha` of `gitDir` into `target` (which must
 * not exist), read-only. The checkout goes to a temporary directory beside
 * `target` with an index file of its own (the mirror is never written to), then
 * is renamed into place, so `target` either does not exist or is complete.
 *
 * An export rather than a `git worktree`: the result holds no `.git` link and
 * depends on nothing in the mirror afterwards, so a re-clone or
 * `git gc --prune=now` of the mirror cannot touch it, at the same cost.
 */
export async function exportCommit(runner: GitRunner, gitDir: string, sha: string, target: string, parent: string): Promise<ExportStats> {
  await mkdir(parent, { recursive: true });
  const temp = await mkdtemp(join(parent, `${TEMP_PREFIX}export-`));
  try {
    const tree = join(temp, 'tree');
    await mkdir(tree);
    const [, stats] = await Promise.all([
      runner.run(
        [
          `--git-dir=${gitDir}`,
          `--work-tree=${tree}`,
          // Parallel checkout: workers = number of cores, for trees of any size worth it.
          '-c',
          'checkout.workers=0',
          '-c',
          'core.symlinks=true',
          'read-tree',
          '-m',
          '-u',
          '--end-of-options',
          sha,
        ],
        { indexFile: join(temp, 'index'), cwd: temp },
      ),
      treeStats(runner, gitDir, sha),
    ]);
    await makeReadOnly(tree);
    await rename(tree, target);
    return stats;
  } finally {
    await removeTree(temp);
  }
}

/** Deletes a snapshot directory (read-only inside) or a temp directory; missing is fine. */
export async function removeTree(path: string): Promise<void> {
  try {
    await run('chmod', ['-R', 'u+w', '--', path]);
  } catch {
    // missing, or already writable: rm tells
  }
  await rm(path, { recursive: true, force: true });
}

async function makeReadOnly(path: string): Promise<void> {
  // One chmod process walks tens of thousands of entries in C, without blocking the event loop.
  await run('chmod', ['-R', 'a-w', '--', path]);
}

/**
 * Files and bytes of a commit's tree, from `ls-tree` (run beside the checkout, on
 * the other core). Only sizes are printed, a few bytes per entry, so even a tree of
 * millions of files stays far below the runner's output cap.
 */
async function treeStats(runner: GitRunner, gitDir: string, sha: string): Promise<ExportStats> {
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
