import { lstatSync, readdirSync, readlinkSync, type Stats } from 'node:fs';
import { join } from 'node:path';

/**
 * Every entry under `dir` as one line, sorted: `path/ mode dir`, `path mode link
 * target`, or `path mode file <fileDetail>` (e.g. its content or its inode),
 * with the permission bits in octal. Two trees with equal lines hold the same
 * names, types, modes and link targets.
 */
export function describeTree(dir: string, fileDetail: (path: string, stat: Stats) => string, prefix = ''): string[] {
  const out: string[] = [];
  for (const name of readdirSync(join(dir, prefix))) {
    const rel = prefix ? `${prefix}/${name}` : name;
    const path = join(dir, rel);
    const stat = lstatSync(path);
    const mode = (stat.mode & 0o777).toString(8);
    if (stat.isDirectory()) out.push(`${rel}/ ${mode} dir`, ...describeTree(dir, fileDetail, rel));
    else if (stat.isSymbolicLink()) out.push(`${rel} ${mode} link ${readlinkSync(path)}`);
    else out.push(`${rel} ${mode} file ${fileDetail(path, stat)}`);
  }
  return out.sort();
}
