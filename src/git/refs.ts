import { createHash } from 'node:crypto';
import { closeSync, fstatSync, openSync, readdirSync, readFileSync, readSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { GitCommandError, RemoteNotFoundError, isRemoteNotFound } from './errors.js';
import type { GitRunner, PreparedRemote } from './runner.js';

/** Refname → object id (hex sha), e.g. `refs/heads/main` → `9de79c…`. */
export type RefMap = Map<string, string>;

/** What the upstream advertises. */
export interface RemoteListing {
  /** Every ref except `HEAD` and peeled `^{}` entries. */
  refs: RefMap;
  /** Target of the upstream's symbolic HEAD (`refs/heads/main`), when advertised. */
  head: string | undefined;
}

export interface RemoteCallOptions {
  signal?: AbortSignal;
  /** For a URL (not a prepared remote): the token to prepare it with (see GitRunner.prepareRemote). */
  token?: string;
  /** For a URL: the origins the token may go to (default: the URL's own). */
  tokenAllowed?: (url: URL) => boolean;
  timeoutMs?: number;
}

/** A sha1 or sha256 object id in hex. */
export const OBJECT_ID = /^[0-9a-f]{40}([0-9a-f]{24})?$/;
/** The contents of a symbolic ref file (`ref: refs/heads/main`). */
const SYMBOLIC_REF = /^ref:\s*(refs\/\S+)$/;

/**
 * Lists the upstream's refs with `git ls-remote --symref`; a URL is prepared
 * first (`runner.prepareRemote`).
 * @throws InvalidRemoteUrlError before running anything if the URL is refused;
 *   EgressRefusedError before anything is sent to a refused address;
 *   RemoteNotFoundError when the upstream repository does not exist.
 */
export async function lsRemote(runner: GitRunner, upstream: string | PreparedRemote, options: RemoteCallOptions = {}): Promise<RemoteListing> {
  const remote = typeof upstream === 'string' ? await runner.prepareRemote(upstream, options) : upstream;
  const { signal, timeoutMs } = options;
  let stdout: string;
  try {
    ({ stdout } = await runner.run(['ls-remote', '--symref', '--end-of-options', remote.url], {
      remote,
      ...(signal ? { signal } : {}),
      ...(timeoutMs !== undefined ? { timeoutMs } : {}),
    }));
  } catch (error) {
    if (isRemoteNotFound(error)) throw new RemoteNotFoundError(remote.requested, error);
    throw error;
  }
  const refs: RefMap = new Map();
  let head: string | undefined;
  for (const line of stdout.split('\n')) {
    const tab = line.indexOf('\t');
    if (tab === -1) continue;
    const left = line.slice(0, tab);
    const name = line.slice(tab + 1).trim();
    if (left.startsWith('ref: ')) {
      if (name === 'HEAD') head = left.slice('ref: '.length).trim();
      continue;
    }
    if (name === 'HEAD' || name.endsWith('^{}') || !OBJECT_ID.test(left)) continue;
    refs.set(name, left);
  }
  return { refs, head };
}

/** Every ref of a (bare) repository, via `git for-each-ref`. */
export async function localRefs(runner: GitRunner, mirrorPath: string, options: { signal?: AbortSignal } = {}): Promise<RefMap> {
  const { stdout } = await runner.run([`--git-dir=${mirrorPath}`, 'for-each-ref', '--format=%(objectname) %(refname)'], options);
  const refs: RefMap = new Map();
  for (const line of stdout.split('\n')) {
    const space = line.indexOf(' ');
    if (space === -1) continue;
    refs.set(line.slice(space + 1), line.slice(0, space));
  }
  return refs;
}

/** The target of a repository's symbolic HEAD, or undefined when HEAD is detached or unreadable. */
export async function localHead(runner: GitRunner, mirrorPath: string, options: { signal?: AbortSignal } = {}): Promise<string | undefined> {
  try {
    const { stdout } = await runner.run([`--git-dir=${mirrorPath}`, 'symbolic-ref', '-q', 'HEAD'], options);
    return stdout.trim() || undefined;
  } catch (error) {
    if (error instanceof GitCommandError) return undefined;
    throw error;
  }
}

/** sha256 (hex) of the sorted `"<sha> <ref>\n"` lines: equal for equal ref sets. */
export function refsChecksum(refs: RefMap): string {
  const lines = [...refs].map(([ref, sha]) => `${sha} ${ref}\n`).sort();
  const hash = createHash('sha256');
  for (const line of lines) hash.update(line, 'utf8');
  return hash.digest('hex');
}

/** Number of refs added, removed or moved between two listings. */
export function countRefChanges(before: RefMap, after: RefMap): number {
  let changes = 0;
  for (const [ref, sha] of after) if (before.get(ref) !== sha) changes++;
  for (const ref of before.keys()) if (!after.has(ref)) changes++;
  return changes;
}

// ---------------------------------------------------------------------------
// In-process reads of a mirror's own files. Every git process costs a fork of
// this (large) process plus git's start-up, 2-3 ms of CPU; on a no-op sync
// these reads replace four of the five processes (rev-parse, for-each-ref,
// cat-file, symbolic-ref). They only ever answer "this is fine" or "cannot
// tell" (undefined): anything unusual is left to git, so every decision about
// a damaged mirror is still git's.
//
// They are synchronous on purpose: a handful of small local files, where a
// syscall costs microseconds but a round trip through the libuv thread pool
// (fs/promises) costs ~0.1 ms of CPU each, which measurably added up per sync.

/** Loose ref files read in-process at most; beyond that one `for-each-ref` is cheaper. */
const MAX_LOOSE_REFS = 1000;
/** Largest object-name table of a pack index read in-process (~200k objects); bigger ones are left to `cat-file`. */
const MAX_INDEX_NAMES_BYTES = 4 * 1024 * 1024;
// eslint-disable-next-line no-control-regex
const BAD_REF_NAME = /[\u0000-\u0020\u007f~^:?*[\\]|\.\.|@\{|\/\/|\.lock(\/|$)|\/\.|\.$|\/$/;

/**
 * The refs of a repository read from its files, as `git for-each-ref` lists
 * them: loose files under `refs/` over `packed-refs`, a symbolic ref listed
 * with the id of its target. Undefined when git must be asked: a broken,
 * dangling, chained or oddly named ref, a ref storage this reader does not
 * know, too many loose refs, any read error.
 * @param symbolic receives the names of the symbolic refs, when given.
 */
export function readRefFiles(gitDir: string, symbolic?: Set<string>): RefMap | undefined {
  try {
    // Loose refs first, then packed-refs, the order git reads them in: `pack-refs`
    // writes packed-refs before deleting the loose files, so a ref being packed
    // meanwhile is seen in one place or the other, never in neither.
    const names: string[] = [];
    if (!listLooseRefs(join(gitDir, 'refs'), 'refs', names)) return undefined;
    const loose: RefMap = new Map();
    const targets = new Map<string, string>();
    for (const name of names) {
      const text = readFileSync(join(gitDir, name), 'utf8').trim();
      const target = SYMBOLIC_REF.exec(text)?.[1];
      if (OBJECT_ID.test(text)) loose.set(name, text);
      else if (target !== undefined && !BAD_REF_NAME.test(target)) targets.set(name, target);
      else return undefined; // broken: git's call
    }
    let packed = '';
    try {
      packed = readFileSync(join(gitDir, 'packed-refs'), 'utf8');
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') return undefined;
    }
    const refs: RefMap = new Map();
    for (const line of packed.split('\n')) {
      if (line === '' || line.startsWith('#') || line.startsWith('^')) continue;
      const space = line.indexOf(' ');
      const sha = line.slice(0, space);
      const name = line.slice(space + 1);
      if (space === -1 || !OBJECT_ID.test(sha) || !name.startsWith('refs/') || BAD_REF_NAME.test(name)) return undefined;
      refs.set(name, sha);
    }
    for (const [name, sha] of loose) refs.set(name, sha);
    // One level only, to a ref that exists: a chain or a dangling target is left to git.
    for (const [name, target] of targets) {
      const sha = targets.has(target) ? undefined : refs.get(target);
      if (sha === undefined) return undefined;
      refs.set(name, sha);
      symbolic?.add(name);
    }
    return refs;
  } catch {
    return undefined;
  }
}

/** Collects the loose ref names under `dir` (git skips dot files and `.lock` files too); false = ask git. */
function listLooseRefs(dir: string, prefix: string, into: string[]): boolean {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    if (entry.name.startsWith('.') || entry.name.endsWith('.lock')) continue;
    const name = `${prefix}/${entry.name}`;
    if (BAD_REF_NAME.test(name)) return false;
    if (entry.isDirectory()) {
      if (!listLooseRefs(join(dir, entry.name), name, into)) return false;
    } else if (entry.isFile()) into.push(name);
    else return false; // a symlink or anything else
    if (into.length > MAX_LOOSE_REFS) return false;
  }
  return true;
}

/**
 * The target of a repository's symbolic HEAD read from its `HEAD` file: the
 * ref name, or null when HEAD is detached. Undefined when the file is not a
 * HEAD git would accept (ask git).
 */
export function readHeadFile(gitDir: string): string | null | undefined {
  try {
    const text = readFileSync(join(gitDir, 'HEAD'), 'utf8').trim();
    if (OBJECT_ID.test(text)) return null;
    const match = SYMBOLIC_REF.exec(text);
    return match && !BAD_REF_NAME.test(match[1]!) ? match[1]! : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Whether every object id is in the repository, looked up in-process: a
 * non-empty loose object file, or an entry of a v2 pack index whose pack is
 * there and ends with the checksum the index records (what git checks when
 * it opens a pack). True: all found. False: some not found (let `cat-file`
 * confirm). Undefined: cannot tell cheaply (alternates, a large or unknown
 * index, a read error).
 */
export function objectsPresent(gitDir: string, ids: Iterable<string>): boolean | undefined {
  try {
    const objects = join(gitDir, 'objects');
    if (statSync(join(objects, 'info', 'alternates'), { throwIfNoEntry: false })) return undefined;
    const wanted = new Set<string>();
    for (const id of ids) {
      if (!OBJECT_ID.test(id)) return undefined;
      const loose = statSync(join(objects, id.slice(0, 2), id.slice(2)), { throwIfNoEntry: false });
      if (!loose?.isFile() || loose.size === 0) wanted.add(id);
    }
    if (wanted.size === 0) return true;
    let files: string[] = [];
    try {
      files = readdirSync(join(objects, 'pack'));
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') return undefined;
    }
    for (const file of files) {
      if (!file.endsWith('.idx') || wanted.size === 0) continue;
      if (!searchPackIndex(join(objects, 'pack', file), wanted)) return undefined;
    }
    return wanted.size === 0;
  } catch {
    return undefined;
  }
}

/** Removes from `wanted` the ids listed in one pack index (v2); false when it cannot be read or its pack does not match. */
function searchPackIndex(idxPath: string, wanted: Set<string>): boolean {
  const hashLen = (wanted.values().next().value as string).length / 2;
  const fd = openSync(idxPath, 'r');
  try {
    const size = fstatSync(fd).size;
    const header = Buffer.alloc(8 + 1024);
    if (size < header.length || readSync(fd, header, 0, header.length, 0) !== header.length) return false;
    if (header.readUInt32BE(0) !== 0xff744f63 || header.readUInt32BE(4) !== 2) return false;
    const count = header.readUInt32BE(8 + 255 * 4);
    // object names, crc32s, 32-bit offsets, then at least the pack and index checksums
    if (count * hashLen > MAX_INDEX_NAMES_BYTES || size < header.length + count * (hashLen + 8) + 2 * hashLen) return false;
    const names = Buffer.alloc(count * hashLen);
    const packChecksum = Buffer.alloc(hashLen);
    if (readSync(fd, names, 0, names.length, header.length) !== names.length) return false;
    if (readSync(fd, packChecksum, 0, hashLen, size - 2 * hashLen) !== hashLen) return false;
    if (!packEndsWith(`${idxPath.slice(0, -'.idx'.length)}.pack`, packChecksum)) return false;
    for (const id of [...wanted]) {
      if (id.length !== hashLen * 2) return false;
      const key = Buffer.from(id, 'hex');
      let lo = key[0] === 0 ? 0 : header.readUInt32BE(8 + (key[0]! - 1) * 4);
      let hi = header.readUInt32BE(8 + key[0]! * 4);
      while (lo < hi) {
        const mid = (lo + hi) >>> 1;
        // names.compare(key, …) orders the index entry against the key: > 0 means the entry sorts after it
        const cmp = names.compare(key, 0, hashLen, mid * hashLen, (mid + 1) * hashLen);
        if (cmp === 0) {
          wanted.delete(id);
          break;
        }
        if (cmp > 0) hi = mid;
        else lo = mid + 1;
      }
    }
    return true;
  } finally {
    closeSync(fd);
  }
}

/** The pack exists and ends with `checksum`. */
function packEndsWith(packPath: string, checksum: Buffer): boolean {
  let fd: number;
  try {
    fd = openSync(packPath, 'r');
  } catch {
    return false;
  }
  try {
    const size = fstatSync(fd).size;
    const trailer = Buffer.alloc(checksum.length);
    return size >= 12 + checksum.length && readSync(fd, trailer, 0, trailer.length, size - trailer.length) === trailer.length && trailer.equals(checksum);
  } finally {
    closeSync(fd);
  }
}
