import { createHash } from 'node:crypto';
import { open, readdir, readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { tokenScopeFor } from './env.js';
import { GitCommandError, RemoteNotFoundError, isRemoteNotFound } from './errors.js';
import type { GitRunner } from './runner.js';
import { validateRemoteUrl } from './url.js';

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
  token?: string;
  timeoutMs?: number;
}

const OBJECT_ID = /^[0-9a-f]{40}([0-9a-f]{24})?$/;

/**
 * Lists the upstream's refs with `git ls-remote --symref`.
 * @throws InvalidRemoteUrlError before running anything if the URL is refused;
 *   RemoteNotFoundError when the upstream repository does not exist.
 */
export async function lsRemote(runner: GitRunner, url: string, options: RemoteCallOptions = {}): Promise<RemoteListing> {
  const remote = validateRemoteUrl(url, runner.protocols);
  let stdout: string;
  try {
    const tokenScope = tokenScopeFor(remote);
    ({ stdout } = await runner.run(['ls-remote', '--symref', '--end-of-options', remote], { ...options, ...(tokenScope ? { tokenScope } : {}) }));
  } catch (error) {
    if (isRemoteNotFound(error)) throw new RemoteNotFoundError(remote, error);
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
// In-process reads of a mirror's own files. Each git process costs a fork of
// this (large) process plus git's start-up, several milliseconds; on a no-op
// sync these reads replaced four of the five processes (for-each-ref,
// cat-file, symbolic-ref, rev-parse). They only ever answer "this is fine" or
// "cannot tell" (undefined): anything unusual is left to git itself, so every
// decision about a damaged mirror is still git's.

/** Loose ref files read in-process at most; beyond that one `for-each-ref` is cheaper. */
const MAX_LOOSE_REFS = 1000;
/** Largest pack index read in-process; bigger ones are left to `cat-file`. */
const MAX_INDEX_BYTES = 8 * 1024 * 1024;
const BAD_REF_CHARS = /[\u0000-\u0020\u007f~^:?*[\\]|\.\.|@\{|\/\/|\.lock(\/|$)|\/\.|\.$|\/$/;

/**
 * The refs of a bare repository read from its files, `packed-refs` then loose
 * files under `refs/` (a loose ref wins), as `git for-each-ref` lists them.
 * Undefined when git must be asked: a symbolic, broken or oddly named ref, a
 * ref storage this reader does not know, too many loose refs, any read error.
 */
export async function readRefFiles(gitDir: string): Promise<RefMap | undefined> {
  try {
    const refs: RefMap = new Map();
    const packed = await readFile(join(gitDir, 'packed-refs'), 'utf8').catch((error: NodeJS.ErrnoException) => {
      if (error.code === 'ENOENT') return '';
      throw error;
    });
    for (const line of packed.split('\n')) {
      if (line === '' || line.startsWith('#') || line.startsWith('^')) continue;
      const space = line.indexOf(' ');
      const sha = line.slice(0, space);
      const name = line.slice(space + 1);
      if (space === -1 || !OBJECT_ID.test(sha) || !name.startsWith('refs/') || BAD_REF_CHARS.test(name)) return undefined;
      refs.set(name, sha);
    }
    const loose: string[] = [];
    if (!(await listLooseRefs(join(gitDir, 'refs'), 'refs', loose))) return undefined;
    const shas = await Promise.all(loose.map((name) => readFile(join(gitDir, name), 'utf8')));
    for (let i = 0; i < loose.length; i++) {
      const sha = shas[i]!.trim();
      if (!OBJECT_ID.test(sha)) return undefined; // symbolic or broken: git's call
      refs.set(loose[i]!, sha);
    }
    return refs;
  } catch {
    return undefined;
  }
}

/** Collects the loose ref names under `dir` (git skips dot files and `.lock` files too); false = ask git. */
async function listLooseRefs(dir: string, prefix: string, into: string[]): Promise<boolean> {
  const entries = await readdir(dir, { withFileTypes: true });
  const subdirs: Promise<boolean>[] = [];
  for (const entry of entries) {
    if (entry.name.startsWith('.') || entry.name.endsWith('.lock')) continue;
    const name = `${prefix}/${entry.name}`;
    if (BAD_REF_CHARS.test(name)) return false;
    if (entry.isDirectory()) subdirs.push(listLooseRefs(join(dir, entry.name), name, into));
    else if (entry.isFile()) into.push(name);
    else return false; // a symlink or anything else
    if (into.length > MAX_LOOSE_REFS) return false;
  }
  return (await Promise.all(subdirs)).every(Boolean) && into.length <= MAX_LOOSE_REFS;
}

/**
 * The target of a repository's symbolic HEAD read from its `HEAD` file: the
 * ref name, or null when HEAD is detached. Undefined when the file is not a
 * HEAD git would accept (ask git).
 */
export async function readHeadFile(gitDir: string): Promise<string | null | undefined> {
  try {
    const text = (await readFile(join(gitDir, 'HEAD'), 'utf8')).trim();
    if (OBJECT_ID.test(text)) return null;
    const match = /^ref:\s*(refs\/\S+)$/.exec(text);
    return match && !BAD_REF_CHARS.test(match[1]!) ? match[1]! : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Whether every object id is in the repository, looked up in-process: a
 * non-empty loose object file, or an entry of a v2 pack index whose pack is
 * there and carries the checksum the index records (what git checks when it
 * opens a pack). True: all found. False: some not found (let `cat-file`
 * confirm). Undefined: cannot tell cheaply (alternates, a large or unknown
 * index, a read error).
 */
export async function objectsPresent(gitDir: string, ids: Iterable<string>): Promise<boolean | undefined> {
  try {
    const objects = join(gitDir, 'objects');
    if (await stat(join(objects, 'info', 'alternates')).then(() => true, () => false)) return undefined;
    const wanted = new Set<string>();
    for (const id of ids) if (OBJECT_ID.test(id)) wanted.add(id);
    else return undefined;
    const looseChecks = await Promise.all(
      [...wanted].map((id) => stat(join(objects, id.slice(0, 2), id.slice(2))).then((info) => info.isFile() && info.size > 0, () => false)),
    );
    let index = 0;
    for (const id of [...wanted]) if (looseChecks[index++]) wanted.delete(id);
    if (wanted.size === 0) return true;
    const packDir = join(objects, 'pack');
    const files = await readdir(packDir).catch((error: NodeJS.ErrnoException) => {
      if (error.code === 'ENOENT') return [] as string[];
      throw error;
    });
    for (const file of files) {
      if (!file.endsWith('.idx') || wanted.size === 0) continue;
      const found = await searchPackIndex(join(packDir, file), wanted);
      if (found === undefined) return undefined;
      for (const id of found) wanted.delete(id);
    }
    return wanted.size === 0;
  } catch {
    return undefined;
  }
}

/** The ids of `wanted` listed in one pack index (v2); undefined when it cannot be read or its pack does not match. */
async function searchPackIndex(idxPath: string, wanted: ReadonlySet<string>): Promise<string[] | undefined> {
  const info = await stat(idxPath);
  if (info.size > MAX_INDEX_BYTES) return undefined;
  const idx = await readFile(idxPath);
  const first = wanted.values().next().value as string;
  const hashLen = first.length / 2;
  if (idx.length < 8 + 1024 || idx.readUInt32BE(0) !== 0xff744f63 || idx.readUInt32BE(4) !== 2) return undefined;
  const count = idx.readUInt32BE(8 + 255 * 4);
  const names = 8 + 1024;
  // names, crc32s, 32-bit offsets, then at least the pack and index checksums
  if (idx.length < names + count * (hashLen + 8) + 2 * hashLen) return undefined;
  const packChecksum = idx.subarray(idx.length - 2 * hashLen, idx.length - hashLen);
  if (!(await packMatches(idxPath.slice(0, -'.idx'.length) + '.pack', packChecksum))) return undefined;
  const found: string[] = [];
  for (const id of wanted) {
    if (id.length !== hashLen * 2) return undefined;
    const key = Buffer.from(id, 'hex');
    const bucket = key[0]!;
    let lo = bucket === 0 ? 0 : idx.readUInt32BE(8 + (bucket - 1) * 4);
    let hi = idx.readUInt32BE(8 + bucket * 4);
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      const cmp = idx.compare(key, 0, hashLen, names + mid * hashLen, names + (mid + 1) * hashLen);
      if (cmp === 0) {
        found.push(id);
        break;
      }
      // idx.compare(key, …) orders the index entry against the key: > 0 means the entry sorts after it
      if (cmp > 0) hi = mid;
      else lo = mid + 1;
    }
  }
  return found;
}

/** The pack exists and ends with the checksum its index records. */
async function packMatches(packPath: string, checksum: Buffer): Promise<boolean> {
  const handle = await open(packPath, 'r').catch(() => undefined);
  if (!handle) return false;
  try {
    const { size } = await handle.stat();
    if (size < 12 + checksum.length) return false;
    const trailer = Buffer.alloc(checksum.length);
    await handle.read(trailer, 0, checksum.length, size - checksum.length);
    return trailer.equals(checksum);
  } finally {
    await handle.close();
  }
}
