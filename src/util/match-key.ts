/**
 * Match keys: one normalised spelling of "which repository" for every way a
 * forge names it, so a webhook can find its source with one indexed lookup.
 *
 * `https://GitHub.com/Org/Repo.git`, `git@github.com:org/repo`,
 * `ssh://git@github.com:22/org/repo.git/` and `git://github.com/org/repo`
 * all become `github.com/org/repo`: host (no user, no port) and path,
 * lower-cased, without a trailing `.git` or slashes. Local repositories
 * (paths and file:// URLs) become `local/<absolute path>`.
 *
 * Lower-casing is deliberate: GitHub and GitLab names are case-insensitive.
 * Two sources that only differ by case (or a local path by case) share a key
 * and are both asked to sync — an extra sync, never a lost one.
 */

const SCHEME = /^([A-Za-z][A-Za-z0-9+.-]*):\/\//;
const SCP = /^(?:[^@/]*@)?(\[[^\]/]*\]|[^:/]+):(?!\/\/)(.*)$/s;

/** Keys of the URLs seen last: a forge names the same few repositories in delivery after delivery. */
const recent = new Map<string, string | null>();
const RECENT_MAX = 10_000;

/** The match key of a repository URL or path, or null when it names no repository. */
export function matchKey(url: string | null | undefined): string | null {
  if (typeof url !== 'string') return null;
  const known = recent.get(url);
  if (known !== undefined) return known;
  const key = computeMatchKey(url);
  // Bounded: past the limit the oldest entry goes (Maps iterate in insertion order).
  if (recent.size >= RECENT_MAX) recent.delete(recent.keys().next().value!);
  recent.set(url, key);
  return key;
}

function computeMatchKey(url: string): string | null {
  const text = url.trim();
  if (text === '' || text.length > 4096) return null;
  const scheme = SCHEME.exec(text)?.[1]?.toLowerCase();
  if (scheme !== undefined) {
    let parsed: URL;
    try {
      parsed = new URL(text);
    } catch {
      return null;
    }
    if (scheme === 'file') return join('local', decode(parsed.pathname));
    return join(parsed.hostname.replace(/^\[|\]$/g, ''), decode(parsed.pathname));
  }
  if (text.startsWith('/')) return join('local', text);
  const scp = SCP.exec(text);
  if (scp) return join(scp[1]!.replace(/^\[|\]$/g, ''), scp[2]!);
  return null;
}

/** The key of `owner/name` (a full name or namespace path) on `host`. */
export function fullNameKey(host: string | null | undefined, fullName: string | null | undefined): string | null {
  if (!host || typeof fullName !== 'string' || fullName.trim() === '') return null;
  return join(host, fullName);
}

/** The host part of a match key (`github.com`, `local`). */
export function matchKeyHost(key: string): string {
  const slash = key.indexOf('/');
  return slash === -1 ? key : key.slice(0, slash);
}

function join(host: string, path: string): string | null {
  const cleanHost = host.trim().toLowerCase();
  const cleanPath = path
    .toLowerCase()
    .replace(/\/{2,}/g, '/')
    .replace(/^\/+|\/+$/g, '')
    .replace(/\.git$/, '')
    .replace(/\/+$/, '');
  if (cleanHost === '' || cleanPath === '') return null;
  return `${cleanHost}/${cleanPath}`;
}

function decode(value: string): string {
  try {
    return decodeURIComponent(value);
  } catch {
    return value;
  }
}
