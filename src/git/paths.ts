import { createHash } from 'node:crypto';
import { isAbsolute, relative, resolve, sep } from 'node:path';
import { PathEscapeError } from './errors.js';

/** Longest sanitized name, in characters. */
export const MAX_NAME_LENGTH = 100;
/** Prefix of clone-in-progress and trash directories under a storage root; never a mirror. */
export const TEMP_PREFIX = '.tmp-';

/**
 * Turns any source name into a safe single path component: keeps `[A-Za-z0-9._-]`,
 * replaces every other run of characters with `-`, strips leading dots and dashes,
 * caps the length at {@link MAX_NAME_LENGTH}. Never returns an empty string.
 */
export function sanitizeName(name: string): string {
  const cleaned = String(name)
    .replace(/[^A-Za-z0-9._-]+/g, '-')
    .replace(/-{2,}/g, '-')
    .replace(/^[.-]+/, '')
    .slice(0, MAX_NAME_LENGTH)
    .replace(/[.-]+$/, '');
  return cleaned.length > 0 ? cleaned : 'repo';
}

/** The first 12 hex digits of sha256(url): stable, and different for different URLs. */
export function urlDigest(url: string): string {
  return createHash('sha256').update(url, 'utf8').digest('hex').slice(0, 12);
}

/** Whose directory a source directory is: the source's id keeps two names that sanitize alike apart. */
export interface DirOwner {
  id: number;
  name: string;
}

/**
 * A source's directory name: `<id>-<sanitized-name>-<sha256(url)[:12]>`. The id
 * makes it unique per source (`coll` and `coll.` sanitize to the same name);
 * the name keeps it readable; the digest changes with the URL, so a new URL
 * gets a new directory (seed 003's `<name>-<sha256(url)[:12]>`, plus the id).
 */
export function sourceDirName(owner: DirOwner, url: string): string {
  return `${owner.id}-${sanitizeName(owner.name)}-${urlDigest(url)}`;
}

/** The directory name of a bare mirror: {@link sourceDirName} + `.git`. */
export function mirrorDirName(owner: DirOwner, url: string): string {
  return `${sourceDirName(owner, url)}.git`;
}

/** The name mirrors had before directory names carried the source id (adopted on their next sync). */
export function legacyMirrorDirName(name: string, url: string): string {
  return `${sanitizeName(name)}-${urlDigest(url)}.git`;
}

/**
 * Resolves `parts` under `root` and returns the absolute, normalised result.
 * @throws PathEscapeError when the result is the root itself or outside it, or a part contains a NUL byte.
 */
export function safeJoin(root: string, ...parts: string[]): string {
  for (const part of [root, ...parts]) {
    if (typeof part !== 'string') throw new PathEscapeError(String(root), String(part), 'path parts must be strings');
    if (part.includes('\0')) throw new PathEscapeError(root, part.replace(/\0/g, '\\0'), 'it contains a NUL byte');
  }
  if (root.length === 0) throw new PathEscapeError(root, parts.join(sep), 'the root is empty');
  const base = resolve(root);
  const target = resolve(base, ...parts);
  const rel = relative(base, target);
  if (rel === '' || rel === '..' || rel.startsWith(`..${sep}`) || isAbsolute(rel)) {
    throw new PathEscapeError(base, target);
  }
  return target;
}
