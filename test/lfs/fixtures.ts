import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { pointerText } from '../../src/lfs/pointer.js';
import { git, tempDir, Upstream } from '../support/git-fixtures.js';
import type { TestObject } from './lfs-upstream.js';

/** `.gitattributes` routing `*.bin` through git-lfs, as `git lfs track '*.bin'` writes it. */
export const ATTRIBUTES = '*.bin filter=lfs diff=lfs merge=lfs -text\n';

/** Commits `files` (path → text, or an object whose pointer is committed) to the upstream's main branch and publishes it. */
export function commitFiles(upstream: Upstream, files: Record<string, string | TestObject>, message = 'files'): string {
  for (const [path, content] of Object.entries(files)) {
    const full = join(upstream.work, path);
    mkdirSync(dirname(full), { recursive: true });
    writeFileSync(full, typeof content === 'string' ? content : pointerText(content));
    git(upstream.work, 'add', '--', path);
  }
  git(upstream.work, 'commit', '-q', '-m', message);
  upstream.publish();
  return git(upstream.work, 'rev-parse', 'HEAD');
}

/** A fresh upstream repository `<root>/<name>.git` with `.gitattributes` for `*.bin`. */
export function lfsRepository(root: string, name: string): Upstream {
  const upstream = Upstream.create(root, name);
  commitFiles(upstream, { '.gitattributes': ATTRIBUTES }, 'track *.bin with git-lfs');
  return upstream;
}

/** A secrets file defining credential `lfs_bot` with `token`, bound to `hosts`; returns its path. */
export function secretsFile(token: string, hosts: string[]): string {
  const path = join(tempDir('forgesync-secrets-'), 'secrets.json');
  writeFileSync(path, JSON.stringify({ lfs_bot: { token, hosts } }), { mode: 0o600 });
  return path;
}
