import { randomBytes } from 'node:crypto';
import { existsSync, readdirSync, renameSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { TEMP_PREFIX } from '../git/paths.js';
import type { LeaseManager } from '../leases/manager.js';
import type { Logger } from '../logging/logger.js';
import { commitDir } from './paths.js';
import { indexFileOf, removeTree, type ExportBase, type ExportStats } from './export.js';
import { HoldFiles, type SnapshotHold } from './holds.js';
import { readJsonFile, writeJsonFile } from './json-file.js';
import { isObjectId } from './revision.js';

/** One materialised commit on disk. */
export interface SnapshotEntry extends ExportStats {
  source: string;
  sourceDir: string;
  sha: string;
  path: string;
  createdAt: string;
  lastUsedAt: string;
  /** Live holds; an entry with any is never evicted. */
  holds: SnapshotHold[];
}

type Meta = Omit<SnapshotEntry, 'sourceDir' | 'path' | 'holds'>;

export interface SnapshotCacheOptions {
  root: string;
  leases: LeaseManager;
  /** Most snapshots kept; beyond it the least recently used unheld ones go. */
  maxCount: number;
  /** Most bytes kept, likewise. */
  maxBytes: number;
  leaseTtlMs: number;
  logger: Logger;
}

export interface SnapshotKey {
  source: string;
  sourceDir: string;
  sha: string;
}

/** Leftover temp directories younger than this may belong to a running export or temporary clone. */
const TEMP_GRACE_MS = 24 * 60 * 60 * 1000;

/**
 * The snapshots on disk: materialised once per commit, shared by every reader,
 * held while in use, evicted least recently used beyond the budget. Making,
 * holding and evicting one commit's snapshot all happen under the lease
 * `snapshot:<source dir>:<sha>`, so a reader never gets a directory that is
 * being written or deleted, and an eviction never removes a held one.
 */
export class SnapshotCache {
  readonly holds: HoldFiles;
  #evictions: Promise<unknown> = Promise.resolve();
  /** The last pass here ended over budget (everything left was held): a release may free room. */
  #overBudget = false;

  constructor(private readonly options: SnapshotCacheOptions) {
    this.holds = new HoldFiles(options.root);
  }

  /**
   * Holds the snapshot of `key`, materialising it with `materialise(target, parent)`
   * first if it is not on disk. Waits up to `waitMs` for another process making
   * the same snapshot (then shares its result).
   */
  async acquire(
    key: SnapshotKey,
    hold: { owner: string; expiresAt: string | null },
    materialise: (target: string, parent: string) => Promise<ExportStats>,
    waitMs: number,
  ): Promise<{ path: string; hold: SnapshotHold; created: boolean }> {
    const path = commitDir(this.options.root, key.sourceDir, key.sha);
    const metaFile = recordFileOf(path);
    let created = false;
    const taken = await this.options.leases.withLease(
      leaseKey(key),
      { ttlMs: this.options.leaseTtlMs, owner: `snapshot ${key.source}`.slice(0, 128), waitMs, retryMs: 25 },
      async () => {
        const now = new Date().toISOString();
        let meta = readJsonFile<Meta>(metaFile);
        if (!meta || !existsSync(path)) {
          // A directory without its record is what a crash mid-eviction leaves: start over.
          await removeTree(path);
          rmSync(indexFileOf(path), { force: true });
          const stats = await materialise(path, join(this.options.root, key.sourceDir));
          meta = { source: key.source, sha: key.sha, ...stats, createdAt: now, lastUsedAt: now };
          created = true;
        } else {
          meta.lastUsedAt = now;
        }
        writeJsonFile(metaFile, meta);
        return this.holds.add({ source: key.source, sourceDir: key.sourceDir, sha: key.sha, ...hold });
      },
    );
    if (created) void this.evict();
    return { path, hold: taken, created };
  }

  /**
   * Ends a hold; the snapshot stays cached until the budget needs its room. A
   * pass runs only when the last one could not get under budget: releasing
   * adds no bytes, and a pass reads every record on disk.
   */
  release(handle: string): boolean {
    const removed = this.holds.remove(handle);
    if (removed && this.#overBudget) void this.evict();
    return removed;
  }

  /** Every snapshot on disk with its live holds, most recently used first. */
  list(): SnapshotEntry[] {
    const holds = this.holds.live();
    return this.#entries()
      .map((entry) => ({ ...entry, holds: holds.filter((hold) => hold.sourceDir === entry.sourceDir && hold.sha === entry.sha) }))
      .sort((a, b) => b.lastUsedAt.localeCompare(a.lastUsedAt));
  }

  /**
   * Evicts least recently used unheld snapshots until the budget is met (one
   * pass at a time per process). Returns the evicted entries.
   */
  evict(): Promise<SnapshotEntry[]> {
    const run = this.#evictions.then(() => this.#evictNow());
    this.#evictions = run.catch((error: unknown) => {
      this.options.logger.warn({ event: 'snapshot_eviction_failed', err: String(error) }, 'snapshot eviction failed');
    });
    return run;
  }

  /**
   * Holds a materialised snapshot of the same source to derive `key` from: the
   * one `choose` picks among the most recently used few that kept their index.
   * Never waits (a base being made or evicted right now is passed over), so two
   * readers deriving from each other's commits cannot deadlock.
   * @returns the base and a function ending its hold; undefined when there is none.
   */
  async borrowBase(
    key: SnapshotKey,
    choose: (candidates: Omit<SnapshotEntry, 'holds'>[]) => Promise<Omit<SnapshotEntry, 'holds'> | undefined>,
  ): Promise<{ base: ExportBase; done: () => void } | undefined> {
    const candidates = this.#entries(key.sourceDir)
      .filter((entry) => entry.sha !== key.sha && existsSync(indexFileOf(entry.path)))
      .sort((a, b) => b.lastUsedAt.localeCompare(a.lastUsedAt))
      .slice(0, BASE_CANDIDATES);
    const chosen = candidates.length > 0 ? await choose(candidates) : undefined;
    if (!chosen) return undefined;
    const taken = await this.options.leases.tryWithLease(leaseKey(chosen), { ttlMs: this.options.leaseTtlMs, owner: 'snapshot base' }, () => {
      if (!existsSync(chosen.path) || !readJsonFile<Meta>(recordFileOf(chosen.path))) return undefined;
      return this.holds.add({ source: chosen.source, sourceDir: chosen.sourceDir, sha: chosen.sha, owner: `base of ${key.sha}`, expiresAt: null });
    });
    const hold = taken.ran ? taken.value : undefined;
    if (!hold) return undefined;
    const handle = hold.handle;
    return { base: { sha: chosen.sha, path: chosen.path }, done: () => void this.holds.remove(handle) };
  }

  /** Resolves when the eviction passes started so far have finished. */
  async settled(): Promise<void> {
    await this.#evictions;
  }

  async #evictNow(): Promise<SnapshotEntry[]> {
    const { maxCount, maxBytes, leases, leaseTtlMs, logger } = this.options;
    this.#sweepTemps();
    const entries = this.list().reverse();
    let count = entries.length;
    let bytes = entries.reduce((sum, entry) => sum + entry.bytes, 0);
    const evicted: SnapshotEntry[] = [];
    for (const entry of entries) {
      if (count <= maxCount && bytes <= maxBytes) break;
      if (entry.holds.length > 0) continue;
      const taken = await leases.tryWithLease(leaseKey(entry), { ttlMs: leaseTtlMs, owner: 'snapshot eviction' }, () => {
        // Re-checked under the lease: a reader may have taken a hold since the listing.
        if (this.holds.live().some((hold) => hold.sourceDir === entry.sourceDir && hold.sha === entry.sha)) return undefined;
        const trash = join(this.options.root, entry.sourceDir, `${TEMP_PREFIX}evict-${randomBytes(6).toString('hex')}`);
        renameSync(entry.path, trash);
        rmSync(recordFileOf(entry.path), { force: true });
        rmSync(indexFileOf(entry.path), { force: true });
        return trash;
      });
      const trash = taken.ran ? taken.value : undefined;
      if (!trash) continue;
      await removeTree(trash);
      count--;
      bytes -= entry.bytes;
      evicted.push(entry);
      logger.info({ event: 'snapshot_evicted', source: entry.source, sha: entry.sha, bytes: entry.bytes }, `evicted snapshot ${entry.source}@${entry.sha}`);
    }
    this.#overBudget = count > maxCount || bytes > maxBytes;
    return evicted;
  }

  #entries(onlySourceDir?: string): Omit<SnapshotEntry, 'holds'>[] {
    const entries: Omit<SnapshotEntry, 'holds'>[] = [];
    for (const sourceDir of onlySourceDir !== undefined ? [onlySourceDir] : readDir(this.options.root)) {
      if (sourceDir.startsWith('.')) continue;
      for (const name of readDir(join(this.options.root, sourceDir))) {
        const sha = name.endsWith('.json') ? name.slice(0, -'.json'.length) : '';
        if (!isObjectId(sha)) continue;
        const path = join(this.options.root, sourceDir, sha);
        const meta = readJsonFile<Meta>(recordFileOf(path));
        if (meta) entries.push({ ...meta, sourceDir, path });
      }
    }
    return entries;
  }

  /** Deletes export, eviction and temporary-clone leftovers of crashed processes. */
  #sweepTemps(): void {
    const cutoff = Date.now() - TEMP_GRACE_MS;
    for (const sourceDir of readDir(this.options.root)) {
      if (sourceDir.startsWith('.') && sourceDir !== CLONES_DIR) continue;
      for (const name of readDir(join(this.options.root, sourceDir))) {
        const path = join(this.options.root, sourceDir, name);
        if (!name.startsWith(TEMP_PREFIX)) continue;
        try {
          if (statSync(path).mtimeMs < cutoff) void removeTree(path);
        } catch {
          // gone meanwhile
        }
      }
    }
  }
}

/** How many recently used snapshots of a source are considered as a base to derive from. */
const BASE_CANDIDATES = 4;

/** Directory (under the root) of the temporary clones made when a source has no mirror yet. */
export const CLONES_DIR = '.clones';

/** The cache record kept beside a snapshot directory: `<sha>.json`. */
function recordFileOf(snapshotPath: string): string {
  return `${snapshotPath}.json`;
}

/** The lease making, holding and evicting one snapshot share. */
export function leaseKey(key: { sourceDir: string; sha: string }): string {
  return `snapshot:${key.sourceDir}:${key.sha}`;
}

function readDir(path: string): string[] {
  try {
    return readdirSync(path);
  } catch {
    return [];
  }
}

