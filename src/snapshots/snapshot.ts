import { readFile } from 'node:fs/promises';
import { SnapshotReleasedError } from './errors.js';
import { resolveInside } from './paths.js';

/** What `forgesync snapshot --json` and the API print for a snapshot. */
export interface SnapshotJson {
  source: string;
  ref: string;
  sha: string;
  path: string;
  /** True when the ref was resolved from the last synced state because a fresh sync could not be had in time. */
  stale: boolean;
  /** Release it with `forgesync snapshot release <handle>` or `DELETE /api/snapshots/<handle>`. */
  handle: string;
  /** When the hold lapses and the snapshot becomes evictable; null: while the holding process lives. */
  expiresAt: string | null;
  /** True when no mirror existed yet and the commit came from a one-off temporary clone. */
  temporaryClone: boolean;
}

/**
 * A read-only directory holding exactly one commit's tree, held from eviction
 * until {@link release}. Many readers of one commit share one directory.
 */
export class Snapshot {
  #released = false;

  constructor(
    private readonly info: SnapshotJson,
    private readonly onRelease: (handle: string) => Promise<void> | void,
  ) {}

  get source(): string {
    return this.info.source;
  }
  /** The ref as asked for. */
  get ref(): string {
    return this.info.ref;
  }
  /** The commit it holds. */
  get sha(): string {
    return this.info.sha;
  }
  /** Absolute path of the directory. */
  get path(): string {
    return this.info.path;
  }
  get stale(): boolean {
    return this.info.stale;
  }
  get handle(): string {
    return this.info.handle;
  }
  get released(): boolean {
    return this.#released;
  }

  /**
   * Absolute path of `relative` inside the snapshot, refusing `..`, absolute
   * paths and symlinks that lead outside it.
   * @throws SnapshotPathEscapeError; SnapshotReleasedError
   */
  resolve(relative: string): string {
    if (this.#released) throw new SnapshotReleasedError(this.sha);
    return resolveInside(this.path, relative);
  }

  /** Reads a file of the snapshot through {@link resolve}. */
  async readFile(relative: string): Promise<Buffer> {
    return await readFile(this.resolve(relative));
  }

  /** Ends this reader's hold (idempotent); the directory may be evicted afterwards. */
  async release(): Promise<void> {
    if (this.#released) return;
    this.#released = true;
    await this.onRelease(this.handle);
  }

  toJSON(): SnapshotJson {
    return { ...this.info };
  }
}
