import { createHash } from 'node:crypto';
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
