import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/*
 * What is inside a repository archive (`/tarball`, `/zipball`): compared by
 * its files, not its bytes (compression need not be byte-identical).
 */

/** Every file of an archive (`tar.gz` or `zip`) with its content, by path. */
export function archiveFiles(bytes: Buffer, format: 'tar.gz' | 'zip'): Record<string, string> {
  const dir = mkdtempSync(join(tmpdir(), 'git-data-archive-'));
  try {
    const file = join(dir, `archive.${format}`);
    writeFileSync(file, bytes);
    const out = join(dir, 'out');
    mkdirSync(out);
    if (format === 'zip') execFileSync('unzip', ['-q', file, '-d', out]);
    else execFileSync('tar', ['-xzf', file, '-C', out]);
    const listed = execFileSync('find', ['.', '-type', 'f'], { cwd: out }).toString('utf8').split('\n').filter(Boolean).sort();
    return Object.fromEntries(listed.map((path) => [path, readFileSync(join(out, path), 'utf8')]));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

