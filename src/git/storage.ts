import { randomBytes } from 'node:crypto';
import { mkdir, mkdtemp, readFile, readdir, rename, rm, stat, writeFile } from 'node:fs/promises';
import { redactUrl } from '../util/redact.js';
import { mirrorDirName, safeJoin, sanitizeName, TEMP_PREFIX } from './paths.js';
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

/** The path of the mirror of `name`/`url` under `storage` (see {@link normalisedUrl}). */
export function mirrorPathFor(storage: string, name: string, url: string): string {
  return safeJoin(storage, mirrorDirName(name, normalisedUrl(url)));
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
 * Deletes the mirror of `name`/`url` under `storage`.
 * @returns false when there was nothing to delete.
 * @throws PathEscapeError if the derived path would leave `storage`.
 */
export async function removeMirror(storage: string, name: string, url: string): Promise<boolean> {
  return discardDir(storage, mirrorPathFor(storage, name, url));
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
 * Other mirrors of the same source (same recorded name) made for a different URL:
 * what is left behind when a source's URL changes.
 */
export async function staleMirrors(storage: string, name: string, url: string): Promise<string[]> {
  const prefix = `${sanitizeName(name)}-`;
  const own = mirrorDirName(name, url);
  const entries = await readdir(storage).catch(() => [] as string[]);
  const stale: string[] = [];
  for (const entry of entries) {
    if (entry === own || !entry.startsWith(prefix) || !/^-[0-9a-f]{12}\.git$/.test(entry.slice(prefix.length - 1))) continue;
    const dir = safeJoin(storage, entry);
    const meta = await readMirrorMeta(dir);
    if (meta.name === name && meta.url !== recordedUrl(url)) stale.push(dir);
  }
  return stale;
}
