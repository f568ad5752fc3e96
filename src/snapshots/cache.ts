import { createHash, randomBytes } from 'node:crypto';
import { existsSync, readdirSync, renameSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { TEMP_PREFIX } from '../git/paths.js';
import type { LeaseManager } from '../leases/manager.js';
import type { Logger } from '../logging/logger.js';
import { commitDir } from './paths.js';
import { indexFileOf, removeTree, type ExportBase, type ExportStats } from './export.js';
import { checkBudget, heldBytes, type BudgetRequest } from './budget.js';
import { HoldFiles, type SnapshotHold } from './holds.js';
import { readJsonFile, writeJsonFile } from './json-file.js';
import { isObjectId } from './revision.js';
import { ownerName } from '../leases/owner.js';

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
  /** Most bytes kept, likewise; held snapshots may never take more (see acquire). */
  maxBytes: number;
  leaseTtlMs: number;
  logger: Logger;
}

export interface SnapshotKey {
  source: string;
  sourceDir: string;
  sha: string;
}

/** How a snapshot that is not on disk yet is made. */
export interface SnapshotMaker {
  /** Its files and bytes, read from git before anything is written: the budget needs them first. */
  measure(): Promise<ExportStats>;
  /** Writes it into `target` (which must not exist) via a temporary directory in `parent`; `measured` is what measure found. */
  materialise(target: string, parent: string, measured: ExportStats): Promise<ExportStats>;
}

/** Leftover temp directories younger than this may belong to a running export or temporary clone. */
const TEMP_GRACE_MS = 24 * 60 * 60 * 1000;
/** How long a request waits for other processes' budget checks (each a few file reads). */
const BUDGET_WAIT_MS = 30_000;

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
  /** Budget checks of this process, one after another (see #withinBudget). */
  #budgetQueue: Promise<unknown> = Promise.resolve();
  /** The lease budget checks on this snapshot directory take, whichever process runs them. */
  readonly #budgetLease: string;

  constructor(private readonly options: SnapshotCacheOptions) {
    this.holds = new HoldFiles(options.root);
    this.#budgetLease = `snapshot-budget:${createHash('sha256').update(options.root).digest('hex').slice(0, 16)}`;
  }

  /**
   * Holds the snapshot of `key`, materialising it with `maker` first if it is
   * not on disk. Waits up to `waitMs` for another process making the same
   * snapshot (then shares its result). Refused, with nothing made or held, when
   * holding it would make held snapshots exceed the byte budget.
   * @throws SnapshotBudgetExceededError
   */
  async acquire(
    key: SnapshotKey,
    hold: { owner: string; expiresAt: string | null; creator?: string },
    maker: SnapshotMaker,
    waitMs: number,
  ): Promise<{ path: string; hold: SnapshotHold; created: boolean }> {
    const path = commitDir(this.options.root, key.sourceDir, key.sha);
    const metaFile = recordFileOf(path);
    let created = false;
    const taken = await this.options.leases.withLease(
      leaseKey(key),
      { ttlMs: this.options.leaseTtlMs, owner: ownerName(`snapshot ${key.source}`), waitMs, retryMs: 25 },
      async () => {
        const meta = readJsonFile<Meta>(metaFile);
        if (!meta || !existsSync(path)) {
          created = true;
          return await this.#make(key, path, hold, maker);
        }
        const reader = await this.#withinBudget({ ...key, bytes: meta.bytes }, () => this.holds.add({ ...key, ...hold }));
        writeJsonFile(metaFile, { ...meta, lastUsedAt: new Date().toISOString() });
        return reader;
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

  /** What held snapshots take (each counted once) and the most they may take. */
  budget(): { heldBytes: number; maxBytes: number } {
    return { heldBytes: heldBytes(this.#entries(), this.holds.live()).bytes, maxBytes: this.options.maxBytes };
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
      return this.holds.add({ source: chosen.source, sourceDir: chosen.sourceDir, sha: chosen.sha, owner: `base of ${key.sha}`, expiresAt: null, purpose: 'base' });
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

  /**
   * Materialises `key` (under its lease) and returns the reader's hold. The
   * size is measured from git first, so the budget can refuse before anything
   * is written; a `making` hold then keeps the room (and the snapshot) until
   * the reader's hold replaces it. It is bound to this process, so a crash
   * mid-export cannot leave a claim behind.
   */
  async #make(key: SnapshotKey, path: string, hold: { owner: string; expiresAt: string | null; creator?: string }, maker: SnapshotMaker): Promise<SnapshotHold> {
    // A directory without its record is what a crash mid-eviction leaves: start over.
    await this.#removeSnapshot(path);
    const measured = await maker.measure();
    const making = await this.#withinBudget({ ...key, bytes: measured.bytes }, () =>
      this.holds.add({ ...key, owner: ownerName(`making for ${hold.owner}`), expiresAt: null, purpose: 'making', bytes: measured.bytes }),
    );
    try {
      const stats = await maker.materialise(path, join(this.options.root, key.sourceDir), measured);
      const now = new Date().toISOString();
      writeJsonFile(recordFileOf(path), { source: key.source, sha: key.sha, ...stats, createdAt: now, lastUsedAt: now } satisfies Meta);
      return this.holds.add({ ...key, ...hold });
    } finally {
      // On failure the export left nothing (it renames into place last); a directory
      // without its record would be removed by the next acquire, as after a crash.
      this.holds.remove(making.handle);
    }
  }

  /**
   * Runs `add` (which records a hold on `request`'s snapshot) if that keeps held
   * bytes within the budget. One check at a time per snapshot directory: in this
   * process by a queue (no lease polling between its own requests), across
   * processes by a lease, so two requests can never both take the last room.
   * Only quick, synchronous work runs under it, never a wait for another lease.
   * @throws SnapshotBudgetExceededError
   */
  async #withinBudget(request: BudgetRequest, add: () => SnapshotHold): Promise<SnapshotHold> {
    const { leases, leaseTtlMs, maxBytes } = this.options;
    const run = this.#budgetQueue.then(() =>
      leases.withLease(this.#budgetLease, { ttlMs: leaseTtlMs, owner: 'snapshot budget', waitMs: BUDGET_WAIT_MS, retryMs: 25 }, () => {
        checkBudget(request, this.#entries(), this.holds.live(), maxBytes);
        return add();
      }),
    );
    this.#budgetQueue = run.catch(() => undefined);
    return await run;
  }

  async #removeSnapshot(path: string): Promise<void> {
    await removeTree(path);
    rmSync(indexFileOf(path), { force: true });
    rmSync(recordFileOf(path), { force: true });
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

