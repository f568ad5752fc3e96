import { appendFileSync, lstatSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { removeStaleLocks, STALE_LOCK_AGE_MS, type RemovedLock } from './locks.js';
import { OBJECT_ID } from './refs.js';

/*
 * What housekeeping reads and keeps in a mirror's own directory (see
 * housekeeping.ts): how untidy the mirror is (measured from its files, no
 * process), what the last runs did, and the ref tips recently served that
 * must keep their objects. Everything here lives inside the mirror, so it
 * follows the mirror when it is copied to another shard and goes with it
 * when it is removed or re-cloned. Read and written under the source's lease.
 */

/** How untidy a mirror is, as its files show. */
export interface MirrorMeasure {
  /** Loose objects (`objects/xx/…`), counted exactly. */
  looseObjects: number;
  /** Packs that are not cruft packs (no `.mtimes`) nor kept (`.keep`). */
  packs: number;
  /** Cruft packs: unreachable objects waiting for their grace period to end. */
  cruftPacks: number;
  /** Packs written after the multi-pack index (all packs when there is none): not covered by its bitmap. */
  packsOutsideMidx: number;
  /** A reachability bitmap (of the multi-pack index or of a pack) exists. */
  bitmap: boolean;
  /** A commit-graph exists. */
  commitGraph: boolean;
  /** Loose ref files under `refs/` (counting stops at {@link MAX_COUNTED_REFS}). */
  looseRefs: number;
  /** Size of `packed-refs` in bytes (what a `pack-refs` rewrites). */
  packedRefsBytes: number;
}

/** What the last housekeeping runs of a mirror left, in `<mirror>/forgesync-housekeeping.json`. */
export interface HousekeepingState {
  /** When housekeeping last ran a task (epoch ms). */
  lastRunAt?: number;
  /** The tasks of that run. */
  lastTasks?: string[];
  /** When the last full repack ran, or when the mirror was first seen (a fresh clone is one pack). */
  fullRepackAt?: number;
  /** The refs checksum at the last full repack: a full repack is due only when refs moved since. */
  fullRepackChecksum?: string;
  /** The refs checksum housekeeping last saw: the ref moves after it are the ones it must retain tips of. */
  refsChecksum?: string;
  /**
   * No unreachable object may be pruned before this time (epoch ms): set when
   * refs moved without housekeeping seeing which tips went (first sight of a
   * mirror, or a sync whose follower never ran).
   */
  pruneEmbargoUntil?: number;
  /** The measure after the last look. */
  measured?: MirrorMeasure;
}

const STATE_FILE = 'forgesync-housekeeping.json';
/** The reflog whose entries keep recently served tips reachable for git (repack `--reflog`, prune). */
const RETAINED_LOG = join('logs', 'HEAD');
/** Loose refs counted at most; past this many, housekeeping is due anyway. */
const MAX_COUNTED_REFS = 10_000;
const ZERO_ID = '0000000000000000000000000000000000000000';

/** The state housekeeping left in `mirror`; empty when there is none or it is unreadable. */
export function readHousekeepingState(mirror: string): HousekeepingState {
  try {
    const parsed = JSON.parse(readFileSync(join(mirror, STATE_FILE), 'utf8')) as unknown;
    return parsed !== null && typeof parsed === 'object' ? (parsed as HousekeepingState) : {};
  } catch {
    return {};
  }
}

/** Replaces the state file of `mirror` (written whole, then renamed over the old one). */
export function writeHousekeepingState(mirror: string, state: HousekeepingState): void {
  const file = join(mirror, STATE_FILE);
  writeFileSync(`${file}.next`, `${JSON.stringify(state)}\n`);
  renameSync(`${file}.next`, file);
}

/**
 * Measures `mirror` from its files: one `readdir` of `objects/` and one of
 * each loose object directory present (a packed mirror has none), one of
 * `objects/pack/`, and a walk of `refs/` (empty directories once refs are packed).
 */
export function measureMirror(mirror: string): MirrorMeasure {
  const objects = join(mirror, 'objects');
  let looseObjects = 0;
  for (const dir of listDir(objects)) {
    if (!/^[0-9a-f]{2}$/.test(dir)) continue;
    for (const name of listDir(join(objects, dir))) if (/^[0-9a-f]{38}([0-9a-f]{24})?$/.test(name)) looseObjects++;
  }
  const packDir = join(objects, 'pack');
  const files = new Set(listDir(packDir));
  const midx = mtimeOf(join(packDir, 'multi-pack-index'));
  let packs = 0;
  let cruftPacks = 0;
  let packsOutsideMidx = 0;
  let bitmap = false;
  for (const file of files) {
    if (file.endsWith('.bitmap')) bitmap = true;
    if (!file.endsWith('.pack')) continue;
    const base = file.slice(0, -'.pack'.length);
    if (files.has(`${base}.keep`)) continue;
    if (files.has(`${base}.mtimes`)) {
      cruftPacks++;
      continue;
    }
    packs++;
    if (midx === undefined || (mtimeOf(join(packDir, file)) ?? 0) > midx) packsOutsideMidx++;
  }
  const commitGraph = mtimeOf(join(objects, 'info', 'commit-graph')) !== undefined || mtimeOf(join(objects, 'info', 'commit-graphs', 'commit-graph-chain')) !== undefined;
  const packedRefsBytes = statSync(join(mirror, 'packed-refs'), { throwIfNoEntry: false })?.size ?? 0;
  return { looseObjects, packs, cruftPacks, packsOutsideMidx, bitmap, commitGraph, looseRefs: countLooseRefs(join(mirror, 'refs'), 0), packedRefsBytes };
}

/** Loose ref files under `dir` (lock and dot files skipped, as git does), `counted` so far included. */
function countLooseRefs(dir: string, counted: number): number {
  let count = counted;
  let entries;
  try {
    entries = readdirSync(dir, { withFileTypes: true });
  } catch {
    return count;
  }
  for (const entry of entries) {
    if (count >= MAX_COUNTED_REFS) break;
    if (entry.name.startsWith('.') || entry.name.endsWith('.lock')) continue;
    if (entry.isDirectory()) count = countLooseRefs(join(dir, entry.name), count);
    else if (entry.isFile()) count++;
  }
  return count;
}

/**
 * Keeps the objects of `tips` (ref tips a sync just moved or deleted, which
 * clones started before it may still be reading) for git: each becomes an
 * entry of the mirror's HEAD reflog, stamped `nowMs`. Every git that decides
 * what is reachable (repack with `--reflog`, prune, gc) counts reflog entries,
 * so these objects survive any repack until {@link expireRetainedTips} drops
 * the entry. (A deleted ref takes its own reflog with it; HEAD's stays.)
 */
export function retainTips(mirror: string, tips: Iterable<string>, nowMs: number): number {
  const seconds = Math.floor(nowMs / 1000);
  const lines = [...new Set(tips)].filter((tip) => OBJECT_ID.test(tip)).map((tip) => `${ZERO_ID} ${tip} forgesync <forgesync@localhost> ${seconds} +0000\tforgesync: served until ${seconds}\n`);
  if (lines.length === 0) return 0;
  mkdirSync(join(mirror, 'logs'), { recursive: true });
  appendFileSync(join(mirror, RETAINED_LOG), lines.join(''));
  return lines.length;
}

/**
 * Drops the HEAD reflog entries older than `cutoffMs` (ours, and any git
 * appended), so that their objects may be pruned once otherwise unreachable
 * and old enough. Returns how many entries are left.
 */
export function expireRetainedTips(mirror: string, cutoffMs: number): number {
  const file = join(mirror, RETAINED_LOG);
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch {
    return 0;
  }
  const kept = text.split('\n').filter((line) => line !== '' && entrySeconds(line) * 1000 >= cutoffMs);
  writeFileSync(`${file}.next`, kept.map((line) => `${line}\n`).join(''));
  renameSync(`${file}.next`, file);
  return kept.length;
}

/** The timestamp of a reflog line (`<old> <new> <name> <email> <seconds> <tz>\t<message>`); 0 when unreadable (dropped). */
function entrySeconds(line: string): number {
  const head = line.split('\t', 1)[0]!;
  const match = /(\d+) [+-]\d{4}$/.exec(head);
  return match ? Number(match[1]) : 0;
}

/** The lock files of housekeeping's own writes under `objects/` (the multi-pack index, the commit-graph). */
const OBJECT_LOCKS = [join('objects', 'pack', 'multi-pack-index.lock'), join('objects', 'info', 'commit-graphs', 'commit-graph-chain.lock'), join('objects', 'info', 'commit-graph.lock')];

/**
 * Temporary packs older than this are a killed git's: a git writing one
 * touches it continually, and none of ours stops writing for that long.
 */
const STALE_TEMP_PACK_AGE_MS = 10 * 60_000;

/**
 * Removes what a housekeeping or fetch git killed mid-write (a lost lease,
 * a stopped process, SIGKILL) left in `mirror`: the locks that would make
 * every later run fail with "File exists" (those of refs, `packed-refs.lock`,
 * see locks.ts, and of the multi-pack index and commit-graph), older than
 * STALE_LOCK_AGE_MS; and the temporary packs (`objects/pack/.tmp-*` of a
 * repack, `tmp_pack_*`/`tmp_idx_*` of a fetch), which nothing else ever
 * removes and which can be as large as the repository, older than
 * STALE_TEMP_PACK_AGE_MS. Under the source's lease: no live git of ours
 * holds or writes one that long.
 */
export function removeStaleHousekeepingLocks(mirror: string, now = Date.now()): RemovedLock[] {
  const removed = removeStaleLocks(mirror, STALE_LOCK_AGE_MS, now);
  const temporaryPacks = listDir(join(mirror, 'objects', 'pack'))
    .filter((name) => name.startsWith('.tmp-') || name.startsWith('tmp_pack_') || name.startsWith('tmp_idx_'))
    .map((name) => ({ path: join('objects', 'pack', name), minAgeMs: STALE_TEMP_PACK_AGE_MS }));
  for (const { path, minAgeMs } of [...OBJECT_LOCKS.map((path) => ({ path, minAgeMs: STALE_LOCK_AGE_MS })), ...temporaryPacks]) {
    const info = lstatSync(join(mirror, path), { throwIfNoEntry: false });
    if (!info?.isFile() || now - info.mtimeMs < minAgeMs) continue;
    rmSync(join(mirror, path), { force: true });
    removed.push({ path, ageMs: Math.round(now - info.mtimeMs) });
  }
  return removed;
}

/** The names in a directory; none when it does not exist. */
function listDir(dir: string): string[] {
  try {
    return readdirSync(dir);
  } catch {
    return [];
  }
}

/** The modification time of `path` (ms), or undefined when it does not exist. */
function mtimeOf(path: string): number | undefined {
  return statSync(path, { throwIfNoEntry: false })?.mtimeMs;
}
