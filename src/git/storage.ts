import { randomBytes } from 'node:crypto';
import { mkdir, mkdtemp, readFile, readdir, rename, rm, stat, writeFile } from 'node:fs/promises';
import { redactUrl } from '../util/redact.js';
import { legacyMirrorDirName, mirrorDirName, safeJoin, sanitizeName, TEMP_PREFIX, type DirOwner } from './paths.js';
import { KNOWN_PROTOCOLS, validateRemoteUrl } from './url.js';

/** File inside a bare mirror recording the upstream URL it was cloned from (credentials removed). */
export const URL_FILE = 'forgesync-url';
/** File inside a bare mirror recording the source name it belongs to. */
export const NAME_FILE = 'forgesync-name';

/** Temp directories this process is filling right now; never cleaned up under its feet. */
const activeTemps = new Set<string>();

/** How a URL is recorded and compared: normalised, user name and password replaced by `***`. */
export function recordedUrl(url: string): string {
  return redactUrl(url);
}

/**
 * `url` normalised the way `syncMirror` does, whatever the protocol allowlist, so
 * every path derived from a source's URL agrees with its mirror's. An unusable
 * URL is returned as it is: it still names a (never created) path.
 */
export function normalisedUrl(url: string): string {
  try {
    return validateRemoteUrl(url, KNOWN_PROTOCOLS);
  } catch {
    return url;
  }
}

/** The path of the mirror of source `owner` at `url` under `storage` (see {@link normalisedUrl}). */
export function mirrorPathFor(storage: string, owner: DirOwner, url: string): string {
  return safeJoin(storage, mirrorDirName(owner, normalisedUrl(url)));
}

/** Creates an empty `.tmp-*` directory under `storage` and marks it in use until {@link releaseTempDir}. */
export async function makeTempDir(storage: string): Promise<string> {
  await mkdir(storage, { recursive: true });
  const dir = await mkdtemp(safeJoin(storage, TEMP_PREFIX));
  activeTemps.add(dir);
  return dir;
}

/** Forgets a temp directory and deletes it if it still exists. */
export async function releaseTempDir(dir: string): Promise<void> {
  try {
    await rm(dir, { recursive: true, force: true });
  } finally {
    activeTemps.delete(dir);
  }
}

/**
 * Moves `source` (a finished clone) to `target` atomically. An existing `target` is
 * first renamed to a `.tmp-trash-*` name, then deleted; if the final rename fails the
 * old directory is put back.
 */
export async function replaceDir(storage: string, source: string, target: string): Promise<void> {
  const trash = await moveToTrash(storage, target);
  try {
    await rename(source, target);
  } catch (error) {
    if (trash) await rename(trash, target).catch(() => undefined);
    throw error;
  }
  if (trash) await rm(trash, { recursive: true, force: true }).catch(() => undefined);
}

/** Deletes a directory under `storage`: renamed away first so that no half-deleted mirror remains. */
export async function discardDir(storage: string, dir: string): Promise<boolean> {
  const trash = await moveToTrash(storage, dir);
  if (!trash) return false;
  await rm(trash, { recursive: true, force: true });
  return true;
}

async function moveToTrash(storage: string, dir: string): Promise<string | undefined> {
  const trash = safeJoin(storage, `${TEMP_PREFIX}trash-${randomBytes(6).toString('hex')}`);
  try {
    await rename(safeJoin(storage, dir), trash);
    return trash;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
}

/**
 * Deletes every mirror of source `owner` under `storage` (of any URL it had),
 * and one left under the name mirrors had before they carried the source id.
 * @returns false when there was nothing to delete.
 */
export async function removeMirror(storage: string, owner: DirOwner, url: string): Promise<boolean> {
  const dirs = await ownMirrors(storage, owner, url, { exceptCurrent: false });
  let removed = false;
  for (const dir of dirs) removed = (await discardDir(storage, dir)) || removed;
  return removed;
}

/**
 * Deletes leftover `.tmp-*` directories (clones killed halfway, trash) under `storage`,
 * except those this process is using. Call it at startup, or with `minAgeMs` longer
 * than the longest clone when other processes share the storage.
 * @returns the names removed.
 */
export async function cleanupTempDirs(storage: string, options: { minAgeMs?: number } = {}): Promise<string[]> {
  let entries: string[];
  try {
    entries = await readdir(storage);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw error;
  }
  const removed: string[] = [];
  const cutoff = Date.now() - (options.minAgeMs ?? 0);
  for (const entry of entries) {
    if (!entry.startsWith(TEMP_PREFIX)) continue;
    const dir = safeJoin(storage, entry);
    if (activeTemps.has(dir)) continue;
    const info = await stat(dir).catch(() => undefined);
    if (!info || info.mtimeMs > cutoff) continue;
    await rm(dir, { recursive: true, force: true });
    removed.push(entry);
  }
  return removed;
}

/** Records which source and URL a mirror belongs to. */
export async function writeMirrorMeta(dir: string, name: string, url: string): Promise<void> {
  await writeFile(safeJoin(dir, URL_FILE), `${recordedUrl(url)}\n`, { mode: 0o644 });
  await writeFile(safeJoin(dir, NAME_FILE), `${name.replace(/[\r\n]/g, ' ')}\n`, { mode: 0o644 });
}

/** Reads what {@link writeMirrorMeta} recorded; undefined fields when absent. */
export async function readMirrorMeta(dir: string): Promise<{ name?: string; url?: string }> {
  const read = (file: string) =>
    readFile(safeJoin(dir, file), 'utf8').then(
      (text) => text.replace(/\n$/, ''),
      () => undefined,
    );
  const [name, url] = await Promise.all([read(NAME_FILE), read(URL_FILE)]);
  return { ...(name !== undefined ? { name } : {}), ...(url !== undefined ? { url } : {}) };
}

/**
 * The other mirror directories of a source (what is left behind when its URL
 * changes, and a legacy one that was not adopted), to delete once the current
 * one is in place.
 */
export function staleMirrors(storage: string, owner: DirOwner, url: string): Promise<string[]> {
  return ownMirrors(storage, owner, url, { exceptCurrent: true });
}

/**
 * The mirror a source had before directory names carried its id, if it is
 * there and recorded for this very source and URL: moved to the new name
 * instead of being cloned again.
 */
export async function legacyMirror(storage: string, owner: DirOwner, url: string): Promise<string | undefined> {
  const dir = safeJoin(storage, legacyMirrorDirName(owner.name, url));
  const meta = await readMirrorMeta(dir);
  return meta.name === owner.name && meta.url === recordedUrl(url) ? dir : undefined;
}

/**
 * The mirror directories of source `owner` (named with its id, or the legacy way),
 * told apart from other sources' by the name recorded inside them, not only by
 * their directory names (a legacy name may look like another source's new one).
 */
async function ownMirrors(storage: string, owner: DirOwner, url: string, options: { exceptCurrent: boolean }): Promise<string[]> {
  const own = mirrorDirName(owner, url);
  const patterns = [`${owner.id}-${sanitizeName(owner.name)}-`, `${sanitizeName(owner.name)}-`];
  const entries = await readdir(storage).catch(() => [] as string[]);
  const found: string[] = [];
  for (const entry of entries) {
    if (options.exceptCurrent && entry === own) continue;
    if (!patterns.some((prefix) => entry.startsWith(prefix) && /^[0-9a-f]{12}\.git$/.test(entry.slice(prefix.length)))) continue;
    const dir = safeJoin(storage, entry);
    const meta = await readMirrorMeta(dir);
    if (meta.name === owner.name) found.push(dir);
  }
  return found;
}
