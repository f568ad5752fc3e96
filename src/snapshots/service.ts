import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { parseTree, type TreeEntry } from '../git/cat-file.js';
import { GitCommandError } from '../git/errors.js';
import { makeTempDir, mirrorPathFor, releaseTempDir } from '../git/storage.js';
import type { GitRunner } from '../git/runner.js';
import type { BoundToken } from '../credentials/store.js';
import type { LeaseManager } from '../leases/manager.js';
import type { RouteContext } from '../server/module-routes.js';
import type { Logger } from '../logging/logger.js';
import type { ForgesyncServer } from '../server/app.js';
import type { Source, SourceWithRegistry } from '../store/types.js';
import { CLONES_DIR, SnapshotCache, type SnapshotEntry, type SnapshotMaker } from './cache.js';
import { PathNotFoundError, RevisionNotFoundError, SnapshotHoldNotFoundError, SnapshotUnavailableError } from './errors.js';
import { exportCommit, measureTree, type ExportStats } from './export.js';
import { ObjectReader } from './objects.js';
import { snapshotSourceDirName } from './paths.js';
import { isObjectId, validateRevision, validateTreePath } from './revision.js';
import { Snapshot } from './snapshot.js';
import { objectAtFromJson, type objectAtJson } from './json.js';
import type { ShardReads } from '../cluster/api.js';
import { ownerName } from '../leases/owner.js';

export interface OpenSnapshotOptions {
  /** Sync the mirror first (under the source's lease) so the ref is current. */
  sync?: boolean;
  /**
   * How long to wait for that sync, or for another process's sync in flight,
   * before serving the last synced commit marked `stale` (default 30 s).
   */
  waitMs?: number;
  /**
   * How long the hold lasts. Default: while this process lives (library use);
   * the CLI and the API pass the configured `snapshotHold`.
   */
  holdMs?: number;
  /** Who holds it, shown by `forgesync snapshot list`. */
  owner?: string;
  /**
   * The API caller making the hold (`callerOf` of its request): only that
   * caller sees and releases it through the API. Unset for CLI and library holds.
   */
  creator?: string;
}

export interface SnapshotsOptions {
  root: string;
  /** How long a CLI or API snapshot is held when the caller names no time. */
  defaultHoldMs: number;
  /** The longest hold an API caller may ask for (the CLI is not capped). */
  apiMaxHoldMs: number;
  mirrorsDir: string;
  runner: GitRunner;
  leases: LeaseManager;
  logger: Logger;
  leaseTtlMs: number;
  maxCount: number;
  maxBytes: number;
  getSource: (name: string) => Promise<SourceWithRegistry>;
  /**
   * Requests a sync and serves it, here or by waiting for the lease holder, for
   * at most `timeoutMs` (Replication.sync); `served` when a successful round served it.
   */
  sync: (name: string, timeoutMs: number) => Promise<SourceWithRegistry & { served: boolean }>;
  /** The source's access token and the hosts it may go to, if it has a credential reference. */
  tokenOf: (source: Source) => Promise<BoundToken | undefined>;
  /** Distributed mode: where a source's files are, when they may be on another shard (its worker answers reads of them). */
  shardFiles?: ShardReads;
}

/** A file or tree read from a commit without materialising it. */
export type ObjectAt =
  | { type: 'blob'; sha: string; path: string; mode?: string; size: number; content: Buffer }
  | { type: 'tree'; sha: string; path: string; entries: TreeEntry[] };

const DEFAULT_WAIT_MS = 30_000;
/** How long a reader waits for another process materialising the same commit. */
const MATERIALISE_WAIT_MS = 10 * 60_000;

/**
 * Consistent per-commit views of sources for analysis jobs (seed 003, without
 * its flaw): the source's lease covers only mutation of the mirror; a snapshot
 * is keyed by commit, immutable, and shared, so one job's branch can never be
 * switched underneath another's.
 */
export class Snapshots {
  readonly cache: SnapshotCache;
  readonly objects: ObjectReader;

  constructor(private readonly options: SnapshotsOptions) {
    this.cache = new SnapshotCache({
      root: options.root,
      leases: options.leases,
      maxCount: options.maxCount,
      maxBytes: options.maxBytes,
      leaseTtlMs: options.leaseTtlMs,
      logger: options.logger,
    });
    this.objects = new ObjectReader(options.runner);
  }

  /**
   * Resolves `ref` of source `name` to a commit and returns a held, read-only
   * snapshot of it. With `sync`, the mirror is synced first; when that cannot
   * happen within `waitMs` the last synced commit is served with `stale: true`.
   * With no mirror at all, a temporary clone is the fallback. Refused when
   * holding it would make held snapshots exceed FORGESYNC_SNAPSHOT_MAX_BYTES.
   * @throws InvalidSnapshotRequestError; SourceNotFoundError; RevisionNotFoundError; SnapshotUnavailableError; SnapshotBudgetExceededError
   */
  async open(name: string, ref: string, options: OpenSnapshotOptions = {}): Promise<Snapshot> {
    const revision = validateRevision(ref);
    const waitMs = options.waitMs ?? DEFAULT_WAIT_MS;
    let source = await this.options.getSource(name);
    const mirror = mirrorPathFor(this.options.mirrorsDir, source, source.url);
    let stale = false;
    if (options.sync || !mirrorExists(mirror)) {
      const outcome = await this.options.sync(source.name, waitMs);
      source = outcome;
      stale = !outcome.served;
    }
    if (!mirrorExists(mirror)) return await this.#openFromTemporaryClone(source, revision, waitMs, options);
    const sha = await this.objects.resolveCommit(mirror, revision);
    if (!sha) throw new RevisionNotFoundError(source.name, ref);
    if (stale) {
      this.options.logger.warn(
        { event: 'snapshot_stale', source: source.name, ref, sha },
        `serving ${source.name}@${ref} from the last synced state: no sync could be had within ${waitMs} ms`,
      );
    }
    return await this.#hold(source, ref, sha, stale, false, options, {
      measure: () => measureTree(this.options.runner, mirror, sha),
      materialise: (target, parent, measured) => this.#materialise(source, mirror, sha, target, parent, measured),
    });
  }

  /**
   * Ends a hold by handle, whoever made it: the CLI's, run by the operator on
   * the machine that holds the snapshots.
   * @throws SnapshotHoldNotFoundError
   */
  release(handle: string): void {
    if (!this.cache.release(handle)) throw new SnapshotHoldNotFoundError(handle);
  }

  /**
   * Ends a hold that `creator` made through the API. Any other handle (another
   * caller's, a CLI or library hold, or none at all) gets the same error as an
   * unknown one, so a caller cannot probe for others' handles.
   * @throws SnapshotHoldNotFoundError
   */
  releaseCreatedBy(handle: string, creator: string): void {
    if (this.cache.holds.find(handle)?.creator !== creator || !this.cache.release(handle)) throw new SnapshotHoldNotFoundError(handle);
  }

  /** Every snapshot on disk with only the holds `creator` made through the API: others' handles never show. */
  listCreatedBy(creator: string): SnapshotEntry[] {
    return this.cache.list().map((entry) => ({ ...entry, holds: entry.holds.filter((hold) => hold.creator === creator) }));
  }

  /**
   * The file or tree at `path` of `ref` (branch, tag or sha) of source `name`,
   * read from the mirror without materialising anything.
   * @throws RevisionNotFoundError; PathNotFoundError; SnapshotUnavailableError when there is no mirror yet
   */
  async readAt(name: string, ref: string, path: string): Promise<ObjectAt> {
    // Distributed: the files are on the source's shard, whose worker answers.
    const { shardFiles } = this.options;
    const remote = await shardFiles?.endpointFor(name);
    if (!remote) return this.readAtHere(name, ref, path);
    const url = `/api/sources/${encodeURIComponent(name)}/contents?${new URLSearchParams({ ref, path })}`;
    return objectAtFromJson(await shardFiles!.readJson<ReturnType<typeof objectAtJson>>(remote, url, 'cli'));
  }

  /** {@link readAt} from this process's mirrors (the routes forward a read of another shard's files themselves). */
  async readAtHere(name: string, ref: string, path: string): Promise<ObjectAt> {
    const revision = validateRevision(ref);
    const cleanPath = validateTreePath(path);
    const source = await this.options.getSource(name);
    const mirror = this.#existingMirror(source);
    const sha = await this.objects.resolveCommit(mirror, revision);
    if (!sha) throw new RevisionNotFoundError(source.name, ref);
    const object = await this.objects.read(mirror, sha, cleanPath);
    if (!object?.content || object.type === 'commit' || object.type === 'tag') throw new PathNotFoundError(sha, cleanPath);
    if (object.type === 'tree') {
      return { type: 'tree', sha, path: cleanPath, entries: parseTree(object.content, object.oid.length) };
    }
    return { type: 'blob', sha, path: cleanPath, size: object.size, content: object.content };
  }

  /** Content of the file at `path` of commit (or ref) `sha`. */
  async readFileAt(name: string, sha: string, path: string): Promise<Buffer> {
    const object = await this.readAt(name, sha, path);
    if (object.type !== 'blob') throw new PathNotFoundError(object.sha, `${object.path} (a directory)`);
    return object.content;
  }

  /** Entries of the directory at `path` ('' for the root) of commit (or ref) `sha`. */
  async listTree(name: string, sha: string, path = ''): Promise<TreeEntry[]> {
    const object = await this.readAt(name, sha, path);
    if (object.type !== 'tree') throw new PathNotFoundError(object.sha, `${object.path}/ (a file)`);
    return object.entries;
  }

  /** How long a CLI or API snapshot is held when the caller names no time (FORGESYNC_SNAPSHOT_HOLD). */
  get defaultHoldMs(): number {
    return this.options.defaultHoldMs;
  }

  /** Every snapshot on disk, most recently used first, with its holds. */
  list(): SnapshotEntry[] {
    return this.cache.list();
  }

  /** The bytes held snapshots take and the most they may (what a refused snapshot is measured by). */
  budget() {
    return this.cache.budget();
  }

  /** The snapshot routes; reads of files on another shard are forwarded to its worker. */
  routes(server: ForgesyncServer, context: RouteContext): Promise<void> {
    return this.#register(server, context, this.options.shardFiles);
  }

  /** The same routes as a worker serves them to api processes: over its own files only. */
  shardRoutes(server: ForgesyncServer, context: RouteContext): Promise<void> {
    return this.#register(server, context, undefined);
  }

  async #register(server: ForgesyncServer, context: RouteContext, shardReads: ShardReads | undefined): Promise<void> {
    const { defaultHoldMs, apiMaxHoldMs } = this.options;
    // Loaded only by a serving process: the CLI's other commands start without the HTTP stack.
    const { snapshotRoutes } = await import('./routes.js');
    await server.register(snapshotRoutes(this, { ...context, ...(shardReads ? { shardReads } : {}), defaultHoldMs, maxHoldMs: apiMaxHoldMs }), { prefix: '/api' });
  }

  /** Resolves once the evictions running now (a new snapshot may start one) have finished. */
  settled(): Promise<void> {
    return this.cache.settled();
  }

  /** Lets running evictions finish and stops the long-lived readers. */
  async stop(): Promise<void> {
    await this.settled();
    this.objects.close();
  }

  #existingMirror(source: Source): string {
    const mirror = mirrorPathFor(this.options.mirrorsDir, source, source.url);
    if (!mirrorExists(mirror)) throw new SnapshotUnavailableError(`${source.name} has no mirror yet (run: forgesync sync ${source.name} --wait)`);
    return mirror;
  }

  /**
   * No mirror yet and none could be made in time (another process is making
   * it): one temporary bare clone, one at a time per source, exported into the
   * cache like any snapshot and then deleted.
   */
  async #openFromTemporaryClone(source: SourceWithRegistry, revision: string, waitMs: number, options: OpenSnapshotOptions): Promise<Snapshot> {
    const { runner, leases, leaseTtlMs } = this.options;
    return await leases.withLease(
      `snapshot-clone:${source.id}`,
      { ttlMs: leaseTtlMs, owner: ownerName(`temporary clone ${source.name}`), waitMs: Math.max(waitMs, MATERIALISE_WAIT_MS), retryMs: 100 },
      async () => {
        const mirror = mirrorPathFor(this.options.mirrorsDir, source, source.url);
        if (mirrorExists(mirror)) return await this.open(source.name, revision, { ...options, sync: false });
        const temp = await makeTempDir(join(this.options.root, CLONES_DIR));
        try {
          const bound = await this.options.tokenOf(source);
          // The same preparation as a mirror sync: egress policy, redirects resolved, token only where bound.
          const remote = await runner.prepareRemote(source.url, bound ? { token: bound.token, tokenAllowed: (url) => bound.allows(url) } : {});
          const clone = join(temp, 'repo.git');
          await runner.run(['clone', '--bare', '--quiet', '--end-of-options', remote.url, clone], { remote }).catch((error: unknown) => {
            // The upstream could not be cloned (gone, unreachable, refused): no snapshot can be had now.
            if (error instanceof GitCommandError) {
              // Its directories (the temporary clone's) are hidden from API callers where errors are answered: server/errors.ts.
              throw new SnapshotUnavailableError(`${source.name} has no mirror yet and a temporary clone of it failed: ${error.message}`, { cause: error });
            }
            throw error;
          });
          const sha = isObjectId(revision) ? revision : await this.objects.resolveCommit(clone, revision);
          this.objects.forget(clone);
          if (!sha) throw new RevisionNotFoundError(source.name, revision);
          this.options.logger.warn({ event: 'snapshot_temporary_clone', source: source.name, sha }, `no mirror of ${source.name} yet: used a temporary clone`);
          return await this.#hold(source, revision, sha, false, true, options, {
            measure: () => measureTree(runner, clone, sha),
            materialise: (target, parent, measured) => exportCommit({ runner, gitDir: clone, sha, target, parent, measured }),
          });
        } finally {
          await releaseTempDir(temp);
        }
      },
    );
  }

  /** Exports `sha`, derived from the closest materialised commit of the source when there is one. */
  async #materialise(source: Source, mirror: string, sha: string, target: string, parent: string, measured: ExportStats): Promise<ExportStats> {
    const key = { source: source.name, sourceDir: snapshotSourceDirName(source, source.url), sha };
    let changed: string[] = [];
    const borrowed = await this.cache.borrowBase(key, async (candidates) => {
      const closest = await this.#closest(mirror, sha, candidates);
      changed = closest?.changed ?? [];
      return closest?.candidate;
    });
    try {
      const started = performance.now();
      const base = borrowed ? { ...borrowed.base, changed } : undefined;
      const stats = await exportCommit({ runner: this.options.runner, gitDir: mirror, sha, target, parent, base, measured });
      this.options.logger.debug(
        { event: 'snapshot_materialised', source: source.name, sha, files: stats.files, derived_from: stats.derivedFrom, base: borrowed?.base.sha ?? null, ms: Math.round(performance.now() - started) },
        `materialised ${source.name}@${sha}`,
      );
      return stats;
    } finally {
      borrowed?.done();
    }
  }

  /**
   * The candidate whose tree differs from `sha`'s in the fewest paths, if that is
   * less than half its files (beyond that, linking first saves little), with those paths.
   */
  async #closest<T extends { sha: string; files: number }>(mirror: string, sha: string, candidates: T[]): Promise<{ candidate: T; changed: string[] } | undefined> {
    let best: { candidate: T; changed: string[] } | undefined;
    for (const candidate of candidates) {
      try {
        const { stdout } = await this.options.runner.run([
          `--git-dir=${mirror}`,
          'diff-tree',
          '-r',
          '-z',
          '--no-renames',
          '--name-only',
          '--end-of-options',
          candidate.sha,
          sha,
        ]);
        const changed = stdout.split('\0').filter(Boolean);
        if (changed.length < candidate.files / 2 && (!best || changed.length < best.changed.length)) best = { candidate, changed };
      } catch {
        // its commit is gone from the mirror (gc after a force-push): not a base
      }
    }
    return best;
  }

  async #hold(
    source: Source,
    ref: string,
    sha: string,
    stale: boolean,
    temporaryClone: boolean,
    options: OpenSnapshotOptions,
    maker: SnapshotMaker,
  ): Promise<Snapshot> {
    const expiresAt = options.holdMs !== undefined ? new Date(Date.now() + options.holdMs).toISOString() : null;
    const { path, hold } = await this.cache.acquire(
      { source: source.name, sourceDir: snapshotSourceDirName(source, source.url), sha },
      { owner: ownerName(options.owner ?? 'library'), expiresAt, ...(options.creator !== undefined ? { creator: options.creator } : {}) },
      maker,
      MATERIALISE_WAIT_MS,
    );
    return new Snapshot({ source: source.name, ref, sha, path, stale, handle: hold.handle, expiresAt, temporaryClone }, (handle) =>
      void this.cache.release(handle),
    );
  }
}

function mirrorExists(path: string): boolean {
  return existsSync(join(path, 'objects')) && existsSync(join(path, 'HEAD'));
}
