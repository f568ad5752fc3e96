import { createHash } from 'node:crypto';
import { createReadStream, type ReadStream } from 'node:fs';
import { opendir, rm, stat, utimes } from 'node:fs/promises';
import { join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import { InvalidInputError } from '../errors.js';
import { isOid, type LfsPointer } from './pointer.js';

/** What checking a stored object found. */
export type ObjectCheck = 'ok' | 'absent' | 'damaged';

/**
 * The LFS objects on this process's disk, stored once by content:
 * `<dataDir>/lfs/objects/<oid[0:2]>/<oid[2:4]>/<oid>` (git-lfs's own
 * layout), shared by every source that references them. A file gets its
 * name only once its bytes were hashed and counted (egress/download.ts
 * renames it into place whole), so a file under an oid's name is that
 * object; `check` hashes it again (fsck). Every path is built from an oid
 * that passed `isOid`: nothing else can name a file here.
 */
export class ObjectFiles {
  /** Where downloads are written until they are whole and verified: one directory, swept of what killed processes left. */
  readonly temporaryDir: string;

  constructor(readonly root: string) {
    this.temporaryDir = join(root, '..', 'downloads');
  }

  /** The directory object `oid` is stored in (download targets). */
  dirOf(oid: string): string {
    return join(this.root, checked(oid).slice(0, 2), oid.slice(2, 4));
  }

  pathOf(oid: string): string {
    return join(this.dirOf(oid), oid);
  }

  /** Whether the object is stored with the size its pointer gives (the content was checked when it was stored). */
  async has(pointer: LfsPointer): Promise<boolean> {
    const info = await stat(this.pathOf(pointer.oid)).catch(() => undefined);
    return info !== undefined && info.isFile() && info.size === pointer.size;
  }

  /** Hashes and measures the stored file again: `ok`, `absent`, or `damaged` (another size or hash). */
  async check(pointer: LfsPointer): Promise<ObjectCheck> {
    const path = this.pathOf(pointer.oid);
    const info = await stat(path).catch(() => undefined);
    if (!info?.isFile()) return 'absent';
    if (info.size !== pointer.size) return 'damaged';
    const hash = createHash('sha256');
    await pipeline(createReadStream(path), hash);
    return hash.digest('hex') === pointer.oid ? 'ok' : 'damaged';
  }

  /** Deletes a damaged file, so that the next sync fetches it again. */
  async discard(oid: string): Promise<void> {
    await rm(this.pathOf(oid), { force: true });
  }

  /** Marks the object as just used (its mtime), so that a prune running meanwhile leaves it (see `stored`). */
  async touch(oid: string): Promise<void> {
    const now = new Date();
    await utimes(this.pathOf(oid), now, now).catch(() => undefined);
  }

  /**
   * Every file under the `<xx>/<yy>/` directories, for pruning: an object
   * (named by its oid, in its own directory), or a leftover (a download's
   * temporary file, which a crash can leave behind), with its mtime.
   */
  async *stored(): AsyncGenerator<{ oid: string; modifiedMs: number } | { leftover: string; modifiedMs: number }> {
    for (const first of await entries(this.root)) {
      for (const second of await entries(join(this.root, first))) {
        for (const name of await entries(join(this.root, first, second))) {
          const path = join(this.root, first, second, name);
          const info = await stat(path).catch(() => undefined);
          if (!info?.isFile()) continue;
          if (isOid(name) && name.startsWith(first + second)) yield { oid: name, modifiedMs: info.mtimeMs };
          else if (name.startsWith('.download-')) yield { leftover: path, modifiedMs: info.mtimeMs };
        }
      }
    }
  }

  /** The stored object as a stream with its size; undefined when it is not stored. */
  async open(oid: string): Promise<{ stream: ReadStream; size: number } | undefined> {
    const path = this.pathOf(oid);
    const info = await stat(path).catch(() => undefined);
    if (!info?.isFile()) return undefined;
    return { stream: createReadStream(path), size: info.size };
  }
}

/** The names in `dir` (none when it does not exist). */
async function entries(dir: string): Promise<string[]> {
  const names: string[] = [];
  try {
    for await (const entry of await opendir(dir)) names.push(entry.name);
  } catch {
    return names;
  }
  return names;
}

function checked(oid: string): string {
  if (!isOid(oid)) throw new InvalidInputError('an LFS object id is 64 lower-case hex digits');
  return oid;
}
