import { createHash } from 'node:crypto';
import { readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';

/*
 * What identifies the refs of a served view (see git/served-view.ts): its
 * refs are one `packed-refs` file, replaced by a rename when a sync moves
 * them, so the file's content is the state of every ref at once. Hashed
 * only when the file changed (another inode, size or mtime): the digest of
 * a view with 100 000 refs costs one stat per fetch, not a read of megabytes.
 */

interface Known {
  stamp: string;
  digest: string;
}

export class RefsDigests {
  readonly #known = new Map<string, Known>();

  /** The digest of `view`'s refs as they are now (read synchronously: callers compare it with what they saw last, in order). */
  digestOf(view: string): string {
    const file = join(view, 'packed-refs');
    const info = statSync(file, { bigint: true });
    const stamp = `${info.dev}:${info.ino}:${info.size}:${info.mtimeNs}`;
    const known = this.#known.get(view);
    if (known?.stamp === stamp) return known.digest;
    const digest = createHash('sha256').update(readFileSync(file)).digest('hex');
    this.#known.set(view, { stamp, digest });
    return digest;
  }
}
