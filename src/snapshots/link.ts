import { execFile } from 'node:child_process';
import { chmod, lstat, mkdir, readdir } from 'node:fs/promises';
import { availableParallelism } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

/** Names handed to one `cp` call, well under any argument-list limit. */
const NAMES_PER_CALL = 256;
/** How deep the tree is opened up looking for enough entries to share out. */
const MAX_SPLIT_DEPTH = 3;

/**
 * `cp -al src dst` (dst must not exist), in parallel: creating tens of thousands
 * of directory entries is kernel work that scales with cores, and one `cp` uses
 * one. The top of the tree is opened up (directories created here, with their
 * modes restored at the end) until there are enough entries to share between
 * one `cp -al` per core.
 */
export async function linkTree(src: string, dst: string, workers = Math.max(2, availableParallelism())): Promise<void> {
  const created: { rel: string; mode: number }[] = [];
  /** Opens directory `rel`: created in dst (writable for now), its entries returned. */
  const openDir = async (rel: string): Promise<Entry[]> => {
    const from = rel === '' ? src : join(src, rel);
    created.push({ rel, mode: (await lstat(from)).mode & 0o7777 });
    await mkdir(rel === '' ? dst : join(dst, rel));
    return (await readdir(from, { withFileTypes: true })).map((entry) => ({ parent: rel, name: entry.name, dir: entry.isDirectory() }));
  };
  let frontier = await openDir('');
  for (let depth = 1; depth < MAX_SPLIT_DEPTH; depth++) {
    // Enough entries to keep every worker busy, or no directory left to open: share these out.
    if (frontier.length >= 8 * workers || !frontier.some((entry) => entry.dir)) break;
    const next = frontier.filter((entry) => !entry.dir);
    for (const entry of frontier) {
      if (entry.dir) next.push(...(await openDir(entry.parent ? `${entry.parent}/${entry.name}` : entry.name)));
    }
    frontier = next;
  }
  // Round-robin shares, each grouped by parent directory: one cp per parent and chunk.
  const shares = Array.from({ length: workers }, () => new Map<string, string[]>());
  frontier.forEach((entry, index) => {
    const share = shares[index % workers] as Map<string, string[]>;
    const names = share.get(entry.parent) ?? [];
    names.push(entry.name);
    share.set(entry.parent, names);
  });
  await Promise.all(
    shares.map(async (share) => {
      for (const [parent, names] of share) {
        const from = parent === '' ? src : join(src, parent);
        const to = parent === '' ? dst : join(dst, parent);
        for (let i = 0; i < names.length; i += NAMES_PER_CALL) {
          await run('cp', ['-al', '-t', to, '--', ...names.slice(i, i + NAMES_PER_CALL)], { cwd: from });
        }
      }
    }),
  );
  // Deepest first, so a read-only directory never blocks restoring one below it.
  for (const { rel, mode } of created.reverse()) await chmod(rel === '' ? dst : join(dst, rel), mode);
}

interface Entry {
  parent: string;
  name: string;
  dir: boolean;
}
