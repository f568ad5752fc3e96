import { existsSync, mkdirSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { rename } from 'node:fs/promises';
import { join } from 'node:path';
import { GitCommandError } from './errors.js';
import { removeStaleLocks, type RemovedLock } from './locks.js';
import { mirrorDirName, safeJoin } from './paths.js';
import { countRefChanges, localHead, localRefs, objectsPresent, readHeadFile, readRefFiles, refsChecksum, type RefMap, type RemoteListing } from './refs.js';
import { listRemote } from './remote-refs.js';
import { isFetchSummaryLine, refChanges } from './ref-changes.js';
import type { RefChange } from '../store/change-log.js';
import type { GitRunOptions, GitRunner, PreparedRemote } from './runner.js';
import {
  discardDir,
  legacyMirror,
  makeTempDir,
  readMirrorMeta,
  recordedUrl,
  releaseTempDir,
  replaceDir,
  staleMirrors,
  URL_FILE,
  writeMirrorMeta,
} from './storage.js';
import { validateRemoteUrl } from './url.js';
import { hasServedView, publishServedView } from './served-view.js';
import { ATTR, withSpan } from '../tracing/index.js';

export { lsRemote, localRefs, localHead, refsChecksum, countRefChanges, type RefMap, type RemoteListing } from './refs.js';
export { cleanupTempDirs, removeMirror, mirrorPathFor } from './storage.js';
export { removeStaleLocks, STALE_LOCK_AGE_MS, type RemovedLock } from './locks.js';

export interface SyncMirrorOptions {
  runner: GitRunner;
  /** Root directory of all mirrors. */
  storage: string;
  /** Source id and name (the directory name is made of both and the URL). */
  id: number;
  name: string;
  /** Upstream URL; validated against `runner.protocols` before anything runs. */
  url: string;
  /** Access token, sent as an `Authorization` header through the environment. */
  token?: string;
  /**
   * Whether the token may be sent to `url` (the upstream, or where it
   * redirects); default: only the upstream URL's own origin. A redirect to
   * an origin this refuses fails the sync (CredentialRedirectError).
   */
  tokenAllowed?: (url: URL) => boolean;
  /** Abort (e.g. lease lost): the running git process group is killed. */
  signal?: AbortSignal;
  /** git's progress lines, redacted. */
  onProgress?: (line: string) => void;
  /** Also run `git fsck --connectivity-only` on the existing mirror (slow on large repositories). */
  fsck?: boolean;
  /**
   * Told of each stale lock file removed from the mirror before the fetch
   * (see locks.ts), to log it: such a lock means a git was killed mid-update.
   */
  onStaleLock?: (lock: RemovedLock) => void;
}

export interface MirrorSyncResult {
  action: 'cloned' | 'recloned' | 'fetched' | 'noop';
  /** Absolute path of the bare mirror. */
  path: string;
  /** Refs added, removed or moved compared with the mirror before this sync. */
  refsChanged: number;
  /** Those refs, by name, with their old and new commits (see ref-changes.ts). */
  refChanges: RefChange[];
  /** {@link refsChecksum} of the mirror's refs after the sync. */
  checksum: string;
  /** {@link refsChecksum} of the upstream refs listed at the start of the sync. */
  upstreamChecksum: string;
  /** True when the mirror's refs equal that listing (false if upstream moved meanwhile). */
  verified: boolean;
  /** The mirror's HEAD target after the sync. */
  head?: string;
  /** Why an existing mirror was re-cloned (`recloned` only). */
  reason?: string;
}

type Inspection =
  | { state: 'missing' }
  | { state: 'replace'; reason: string }
  | { state: 'ok'; refs: RefMap; head: string | undefined };

/** What a sync did to an existing or missing mirror, and why it re-cloned. */
type Outcome = { action: MirrorSyncResult['action']; reason?: string | undefined };

/** What a sync works with once the URL is checked and the upstream remote prepared. */
interface MirrorTarget {
  options: SyncMirrorOptions;
  owner: { id: number; name: string };
  /** The validated upstream URL, and the absolute path of its bare mirror. */
  url: string;
  path: string;
  remote: PreparedRemote;
  git: GitRunOptions;
  /** `--progress` when the caller wants git's progress lines. */
  progress: string[];
}

/**
 * Brings the bare mirror of `url` under `storage` up to date: clone when missing,
 * re-clone when it is corrupt or was made for another URL, otherwise fetch only if
 * `ls-remote` shows a difference. Callers hold the source's lease.
 */
export async function syncMirror(options: SyncMirrorOptions): Promise<MirrorSyncResult> {
  const { runner, signal } = options;
  const target = await prepareTarget(options);
  const { url, path, remote } = target;
  // In-process for a plain local upstream or a clean advertisement, `git ls-remote` otherwise (see remote-refs.ts).
  const upstream = await withSpan('list upstream refs', { [ATTR.source]: options.name }, () => listRemote(runner, remote, signal ? { signal } : {}));
  const inspection = await inspect(runner, path, url, options.fsck ?? false, signal);
  let before: RefMap = new Map();
  let outcome: Outcome;
  // The fetch's ref update lines: they say which moves were forced (see ref-changes.ts).
  const fetchLines: string[] = [];

  if (inspection.state === 'ok') {
    before = inspection.refs;
    // Same refs, compared as maps: the checksums are computed once, in result().
    const unchanged = countRefChanges(before, upstream.refs) === 0;
    if (unchanged && (upstream.head === undefined || upstream.head === inspection.head)) {
      if (!hasServedView(path)) publishServedView(path, before, inspection.head);
      return result('noop', path, [], before, upstream, inspection.head);
    }
    outcome = await withSpan('git fetch', { [ATTR.source]: options.name }, () => fetchOrReclone(target, fetchLines));
  } else {
    outcome = await withSpan('git clone', { [ATTR.source]: options.name }, () => cloneAfresh(target, inspection));
  }
  const head = await followUpstreamHead(target, upstream.head);
  const after = readRefFiles(path) ?? (await localRefs(runner, path, { signal }));
  publishServedView(path, after, head);
  const changes = await refChanges(runner, path, before, after, signal, fetchLines);
  const { action, reason } = outcome;
  return { ...result(action, path, changes, after, upstream, head), ...(reason ? { reason } : {}) };
}

/** Validates the URL, finds (or moves) the mirror's directory and prepares the remote every upstream call goes through. */
async function prepareTarget(options: SyncMirrorOptions): Promise<MirrorTarget> {
  const { runner, storage, name, token, tokenAllowed, signal } = options;
  const owner = { id: options.id, name };
  const url = validateRemoteUrl(options.url, runner.protocols);
  const path = safeJoin(storage, mirrorDirName(owner, url));
  // Synchronous: one syscall when the directory exists, cheaper than a thread-pool round trip per sync.
  mkdirSync(storage, { recursive: true });
  if (!existsSync(path)) {
    // A mirror made before directory names carried the source id moves to its new name.
    const legacy = await legacyMirror(storage, owner, url);
    if (legacy) await rename(legacy, path);
  }
  // Checked against the egress policy, redirects resolved, connections pinned: every git call
  // below that talks to the upstream goes through this one remote (GitRunner.prepareRemote).
  const remote = await runner.prepareRemote(url, {
    ...(token !== undefined ? { token } : {}),
    ...(tokenAllowed ? { tokenAllowed } : {}),
    ...(signal ? { signal } : {}),
  });
  const git: GitRunOptions = {
    ...(signal ? { signal } : {}),
    ...(options.onProgress ? { onStderrLine: options.onProgress } : {}),
    remote,
  };
  const progress = options.onProgress ? ['--progress'] : [];
  return { options, owner, url, path, remote, git, progress };
}

/** Fetches into a usable mirror (its ref update lines into `fetchLines`); re-clones it when the fetch fails on broken history. */
async function fetchOrReclone(target: MirrorTarget, fetchLines: string[]): Promise<Outcome> {
  const { options, path, remote, git, progress } = target;
  const { runner, signal } = options;
  // A git killed mid-update (lost lease, timeout, SIGKILLed worker) may have left lock
  // files that would make this fetch, and every later one, fail with "File exists".
  // Under the source's lease, only an orphan can be that old (see STALE_LOCK_AGE_MS).
  for (const lock of removeStaleLocks(path)) options.onStaleLock?.(lock);
  try {
    await runner.run(
      [
        `--git-dir=${path}`,
        'fetch',
        '--prune',
        '--atomic',
        '--no-write-fetch-head',
        // `git maintenance run --auto` is one more git process per fetch that nearly always finds
        // nothing to do; it runs only when the mirror is due for it (see housekeepingDue).
        ...(housekeepingDue(path) ? [] : ['--no-auto-maintenance']),
        ...progress,
        '--end-of-options',
        remote.url,
        '+refs/*:refs/*',
      ],
      { ...git, onStderrLine: (line) => (isFetchSummaryLine(line) ? fetchLines.push(line) : options.onProgress?.(line)) },
    );
    return { action: 'fetched' };
  } catch (error) {
    // A fetch that fails on a mirror whose history is broken is healed by a re-clone.
    if (!(error instanceof GitCommandError) || (await connected(runner, path, signal))) throw error;
    await clone(target);
    return { action: 'recloned', reason: `fetch failed and the mirror is broken: ${error.message}` };
  }
}

/** Clones a missing or unusable mirror, discarding the mirrors left under the source's earlier URLs. */
async function cloneAfresh(target: MirrorTarget, inspection: Exclude<Inspection, { state: 'ok' }>): Promise<Outcome> {
  const { storage } = target.options;
  const stale = inspection.state === 'missing' ? await staleMirrors(storage, target.owner, target.url) : [];
  await clone(target);
  for (const dir of stale) await discardDir(storage, dir);
  const action = inspection.state === 'missing' && stale.length === 0 ? 'cloned' : 'recloned';
  if (inspection.state === 'replace') return { action, reason: inspection.reason };
  return { action, reason: stale.length > 0 ? 'the source URL changed' : undefined };
}

/** The mirror's HEAD target, first pointed at the upstream's when that differs. */
async function followUpstreamHead(target: MirrorTarget, upstreamHead: string | undefined): Promise<string | undefined> {
  const { path, options } = target;
  const { runner, signal } = options;
  // Read from the files when they are plain (no process); git otherwise.
  const headFile = readHeadFile(path);
  const head = headFile === undefined ? await localHead(runner, path, { signal }) : (headFile ?? undefined);
  if (upstreamHead !== undefined && upstreamHead !== head && /^refs\/\S+$/.test(upstreamHead)) {
    await runner.run([`--git-dir=${path}`, 'symbolic-ref', '--end-of-options', 'HEAD', upstreamHead], { signal });
    return upstreamHead;
  }
  return head;
}

function result(
  action: MirrorSyncResult['action'],
  path: string,
  changes: RefChange[],
  refs: RefMap,
  upstream: RemoteListing,
  head: string | undefined,
): MirrorSyncResult {
  const checksum = refsChecksum(refs);
  const upstreamChecksum = refsChecksum(upstream.refs);
  return {
    action,
    path,
    refsChanged: changes.length,
    refChanges: changes,
    checksum,
    upstreamChecksum,
    verified: checksum === upstreamChecksum,
    ...(head !== undefined ? { head } : {}),
  };
}

/** Clones the remote into a fresh `.tmp-*` directory, records the source's URL, then renames it over the mirror's path. */
async function clone(target: MirrorTarget): Promise<void> {
  const { options, remote, url, path, progress, git } = target;
  const { runner, storage, name } = options;
  const tmp = await makeTempDir(storage);
  try {
    await runner.run(['clone', '--mirror', '--no-local', '--template=', ...progress, '--end-of-options', remote.url, tmp], git);
    await writeMirrorMeta(tmp, name, url);
    await replaceDir(storage, tmp, path);
  } finally {
    await releaseTempDir(tmp);
  }
}

/** Decides whether the directory at `path` is a usable mirror of `url`. */
async function inspect(runner: GitRunner, path: string, url: string, fsck: boolean, signal?: AbortSignal): Promise<Inspection> {
  const info = statSync(path, { throwIfNoEntry: false });
  if (!info) return { state: 'missing' };
  if (!info.isDirectory()) return { state: 'replace', reason: 'not a directory' };
  const quick = inspectFiles(path, url);
  if (quick) {
    if (fsck && !(await connected(runner, path, signal))) return { state: 'replace', reason: 'fsck failed' };
    return quick;
  }
  const gitDir = `--git-dir=${path}`;
  try {
    const { stdout } = await runner.run([gitDir, 'rev-parse', '--is-bare-repository'], { signal });
    if (stdout.trim() !== 'true') return { state: 'replace', reason: 'not a bare repository' };
  } catch (error) {
    if (error instanceof GitCommandError) return { state: 'replace', reason: 'not a git repository' };
    throw error;
  }
  const meta = await readMirrorMeta(path);
  let recorded = meta.url;
  if (recorded === undefined) {
    const config = await runner.run([gitDir, 'config', '--get', 'remote.origin.url'], { signal }).catch(() => undefined);
    recorded = config ? recordedUrl(config.stdout.trim()) : undefined;
  }
  if (recorded !== recordedUrl(url)) return { state: 'replace', reason: 'made for another URL' };
  try {
    const refs = await localRefs(runner, path, { signal });
    if (refs.size > 0) {
      const input = `${[...new Set(refs.values())].join('\n')}\n`;
      const { stdout } = await runner.run([gitDir, 'cat-file', '--batch-check'], { signal, input });
      if (/ missing$/m.test(stdout)) return { state: 'replace', reason: 'ref tips are missing' };
    }
    if (fsck && !(await connected(runner, path, signal))) return { state: 'replace', reason: 'fsck failed' };
    return { state: 'ok', refs, head: await localHead(runner, path, { signal }) };
  } catch (error) {
    if (error instanceof GitCommandError) return { state: 'replace', reason: error.message };
    throw error;
  }
}

/**
 * The usual case of {@link inspect} answered from the mirror's files without
 * starting a process: a bare repository layout git would accept, recorded for
 * `url`, plain refs and HEAD, every ref tip present. The checks git would run
 * (rev-parse, for-each-ref, cat-file --batch-check, symbolic-ref) cost five
 * process starts per sync, more than the ls-remote itself. Undefined as soon as
 * anything is unusual or wrong: git then looks (the slow path below), so a
 * damaged mirror is still judged, and re-cloned, by git.
 */
function inspectFiles(path: string, url: string): Extract<Inspection, { state: 'ok' }> | undefined {
  if (recordedUrlFile(path) !== recordedUrl(url) || !plainBareLayout(path)) return undefined;
  const head = readHeadFile(path);
  const refs = readRefFiles(path);
  if (head === undefined || refs === undefined) return undefined;
  if (refs.size > 0 && objectsPresent(path, refs.values()) !== true) return undefined;
  return { state: 'ok', refs, head: head ?? undefined };
}

/** The URL {@link writeMirrorMeta} recorded, read synchronously (see refs.ts on why); undefined when absent. */
function recordedUrlFile(path: string): string | undefined {
  try {
    return readFileSync(join(path, URL_FILE), 'utf8').replace(/\n$/, '');
  } catch {
    return undefined;
  }
}

/**
 * `objects/` and `refs/` are directories and the config says `bare = true` with
 * no extensions or includes (which only git can interpret): what
 * `git rev-parse --is-bare-repository` answers `true` for.
 */
function plainBareLayout(path: string): boolean {
  try {
    if (!statSync(join(path, 'objects')).isDirectory() || !statSync(join(path, 'refs')).isDirectory()) return false;
    const config = readFileSync(join(path, 'config'), 'utf8');
    if (/^\s*\[\s*(extensions|include|includeif)\b/im.test(config)) return false;
    const bare = [...config.matchAll(/^\s*bare\s*=\s*(\S+)\s*$/gim)].map((match) => match[1]!.toLowerCase());
    return bare.length > 0 && bare.every((value) => value === 'true');
  } catch {
    return false;
  }
}

/** git's defaults for `gc.auto` (loose objects) and `gc.autoPackLimit` (packs). */
const GC_AUTO_LOOSE = 6700;
const GC_AUTO_PACK_LIMIT = 50;

/**
 * Whether `git gc --auto` (what `maintenance run --auto` runs by default) would
 * act on this mirror, by git's own estimate: more than gc.auto/256 loose objects
 * in `objects/17`, or more than gc.autoPackLimit packs without a `.keep`. When
 * unsure (a read error), true: git then decides, as before.
 */
function housekeepingDue(path: string): boolean {
  try {
    const objects = join(path, 'objects');
    let loose = 0;
    for (const name of listDir(join(objects, '17'))) if (/^[0-9a-f]{38}([0-9a-f]{24})?$/.test(name)) loose++;
    if (loose > Math.ceil(GC_AUTO_LOOSE / 256)) return true;
    const packFiles = new Set(listDir(join(objects, 'pack')));
    let packs = 0;
    for (const name of packFiles) if (name.endsWith('.pack') && !packFiles.has(`${name.slice(0, -'.pack'.length)}.keep`)) packs++;
    return packs > GC_AUTO_PACK_LIMIT;
  } catch {
    return true;
  }
}

/** The names in a directory; none when it does not exist. */
function listDir(dir: string): string[] {
  try {
    return readdirSync(dir);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw error;
  }
}

/** `git fsck --connectivity-only` succeeds. */
async function connected(runner: GitRunner, path: string, signal?: AbortSignal): Promise<boolean> {
  try {
    await runner.run([`--git-dir=${path}`, 'fsck', '--connectivity-only', '--no-dangling', '--no-progress'], { signal });
    return true;
  } catch (error) {
    if (error instanceof GitCommandError) return false;
    throw error;
  }
}
