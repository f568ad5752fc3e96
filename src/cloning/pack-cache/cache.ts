import { createHash, randomBytes } from 'node:crypto';
import { mkdirSync, renameSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import type { GitRunner } from '../../git/runner.js';
import type { Logger } from '../../logging/logger.js';
import { PackEntry, startGeneration, type CachedCommand, type DropReason, type GenerationEvents } from './entry.js';
import type { PackCacheMetrics } from './metrics.js';
import { RefsDigests } from './refs-digest.js';

/*
 * The pack-objects cache, as Gitaly's: the pack for one request (the
 * served view, its refs as they are, pack-objects' arguments and stdin) is
 * generated once and kept in a file of `dir` for the next identical
 * request (CI jobs cloning the same commit). Contract:
 * - Single flight: a request identical to one being generated joins it and
 *   streams the same bytes as they are written; one pack-objects per key.
 * - Bounded: entries on disk (kept and being generated) stay within
 *   `maxBytes`, the least recently used kept ones evicted first; an entry
 *   larger than the whole budget is streamed to its readers and not kept.
 * - Fresh: an entry expires `ttlMs` after it completed; when a view's refs
 *   moved, its entries for the old refs are dropped (at the first request
 *   that sees the new refs).
 * - Whole or nothing: an entry is kept only after pack-objects succeeded and
 *   every byte is on disk (a rename from its temporary file); a failed or
 *   killed generation fails the readers that joined it and leaves no file.
 * - Readers are never cut off: each reads through a link of its own, so an
 *   entry evicted while read leaves the budget at once and the disk when its
 *   last reader is done.
 */

export interface PackCacheOptions {
  /** This process's directory of entries (created and removed by the caller); readers' links go in its `readers/`. */
  dir: string;
  maxBytes: number;
  ttlMs: number;
  runner: GitRunner;
  metrics: PackCacheMetrics;
  logger: Logger;
  /** Longest one pack-objects may run. */
  generationTimeoutMs: number;
}

/** One request: `view` the served view (absolute), the command that answers it there (pack-objects, or a clone's upload-pack) and its stdin. */
export interface PackRequest {
  view: string;
  command: CachedCommand;
  stdin: Buffer;
}

/** What answers a request: the entry, the reader's own link to its bytes (the reader removes it), and whether this request started its generation. */
export interface OpenedPack {
  entry: PackEntry;
  readerPath: string;
  generated: boolean;
}

export class PackCache {
  /** Entries by key, least recently used first (a use moves an entry to the end). */
  readonly #entries = new Map<string, PackEntry>();
  /** The refs digest each view was last seen with. */
  readonly #latestRefs = new Map<string, string>();
  readonly #digests = new RefsDigests();
  readonly #sweeper: NodeJS.Timeout;
  #bytes = 0;
  #closed = false;

  constructor(private readonly options: PackCacheOptions) {
    mkdirSync(join(options.dir, 'readers'), { recursive: true, mode: 0o700 });
    // Expired entries leave the disk even when nobody asks for them again.
    this.#sweeper = setInterval(() => this.#sweep(), Math.min(options.ttlMs, 60_000));
    this.#sweeper.unref();
  }

  /** Bytes of the entries on disk (kept and being generated). */
  get bytes(): number {
    return this.#bytes;
  }

  /**
   * The entry answering `request`, with a link of the caller's own to its
   * bytes (in `<dir>/readers/`; the caller removes it when done): a kept
   * entry or one being generated (a hit), else a new generation (a miss).
   * @throws when the view's refs cannot be read, or the entry's file cannot be created.
   */
  open(request: PackRequest): OpenedPack {
    const now = Date.now();
    const refsDigest = this.#digests.digestOf(request.view);
    this.#dropMovedRefs(request.view, refsDigest);
    const key = keyOf(request, refsDigest);
    let entry = this.#entries.get(key);
    if (entry?.completedAt !== undefined && entry.completedAt + this.options.ttlMs <= now) {
      this.#evict(entry, 'ttl');
      entry = undefined;
    }
    if (entry) {
      this.#entries.delete(key);
      this.#entries.set(key, entry);
      entry.lastUsedAt = now;
      this.options.metrics.lookups.inc({ result: 'hit' });
      return { entry, readerPath: this.#linkForReader(entry), generated: false };
    }
    entry = new PackEntry(key, request.view, refsDigest, join(this.options.dir, `${key}.${randomBytes(4).toString('hex')}.tmp`), now);
    startGeneration(entry, { runner: this.options.runner, command: request.command, stdin: request.stdin, timeoutMs: this.options.generationTimeoutMs }, this.#events);
    this.#entries.set(key, entry);
    this.options.metrics.lookups.inc({ result: 'miss' });
    return { entry, readerPath: this.#linkForReader(entry), generated: true };
  }

  #linkForReader(entry: PackEntry): string {
    const path = join(this.options.dir, 'readers', randomBytes(8).toString('hex'));
    entry.linkForReader(path);
    return path;
  }

  /** Stops the generations (their readers fail) and the sweeper; the caller removes the directory. */
  close(): void {
    this.#closed = true;
    clearInterval(this.#sweeper);
    for (const entry of this.#entries.values()) if (entry.state === 'generating') entry.stop();
  }

  readonly #events: GenerationEvents = {
    grew: (entry, bytes) => {
      entry.size += bytes;
      this.#bytes += bytes;
      this.options.metrics.generatedBytes.inc(bytes);
      if (this.#bytes > this.options.maxBytes) this.#enforceBudget();
      entry.notify();
    },
    finished: (entry) => {
      entry.completedAt = Date.now();
      const drop = entry.dropWhenComplete;
      const kept = drop === undefined && !this.#closed && this.#keep(entry);
      // Readers hold descriptors: they finish reading whatever happens to the file now.
      entry.state = 'complete';
      entry.notify();
      if (kept) this.#enforceBudget();
      else if (drop !== undefined) this.#evict(entry, drop);
      else this.#forget(entry);
    },
    failed: (entry, reason) => {
      entry.failure = reason;
      entry.state = 'failed';
      entry.notify();
      this.#forget(entry);
      this.options.metrics.failures.inc();
      if (!this.#closed) this.options.logger.warn({ event: 'pack_cache_generation_failed', view: entry.view, reason }, 'a pack-objects run of the pack cache failed');
    },
  };

  /** Evicts the least recently used complete entries while over budget; an entry being generated that alone exceeds it will not be kept. */
  #enforceBudget(): void {
    const { maxBytes } = this.options;
    for (const entry of this.#entries.values()) {
      if (this.#bytes <= maxBytes) return;
      if (entry.state === 'complete') this.#evict(entry, 'size');
    }
    for (const entry of this.#entries.values()) {
      if (entry.state === 'generating' && entry.size > maxBytes) entry.dropWhenComplete ??= 'size';
    }
  }

  /** The first request that sees `view` with new refs drops its entries for the old ones (those being generated, once complete). */
  #dropMovedRefs(view: string, refsDigest: string): void {
    const previous = this.#latestRefs.get(view);
    this.#latestRefs.set(view, refsDigest);
    if (previous === undefined || previous === refsDigest) return;
    for (const entry of this.#entries.values()) {
      if (entry.view !== view || entry.refsDigest === refsDigest) continue;
      if (entry.state === 'complete') this.#evict(entry, 'refs');
      else entry.dropWhenComplete = 'refs';
    }
  }

  #sweep(): void {
    const expiredBefore = Date.now() - this.options.ttlMs;
    for (const entry of this.#entries.values()) {
      if (entry.completedAt !== undefined && entry.completedAt <= expiredBefore) this.#evict(entry, 'ttl');
    }
  }

  /** Moves a complete entry's file to its kept name (`<key>.pack`); false (logged) when that fails. */
  #keep(entry: PackEntry): boolean {
    const kept = join(this.options.dir, `${entry.key}.pack`);
    try {
      renameSync(entry.path, kept);
    } catch (error) {
      this.options.logger.warn({ event: 'pack_cache_keep_failed', err: String(error) }, 'a pack cache entry could not be kept');
      return false;
    }
    entry.path = kept;
    return true;
  }

  #evict(entry: PackEntry, reason: DropReason): void {
    if (this.#forget(entry)) this.options.metrics.evictions.inc({ reason });
  }

  /** Takes `entry` out of the cache and off the disk; false when it was gone already. */
  #forget(entry: PackEntry): boolean {
    if (this.#entries.get(entry.key) !== entry) return false;
    this.#entries.delete(entry.key);
    this.#bytes -= entry.size;
    try {
      rmSync(entry.path, { force: true });
    } catch (error) {
      this.options.logger.warn({ event: 'pack_cache_remove_failed', err: String(error) }, 'a pack cache file could not be removed');
    }
    return true;
  }
}

/** The cache key: sha256 of the view, its refs, the command (arguments, protocol) and its stdin. */
function keyOf(request: PackRequest, refsDigest: string): string {
  const { view, command, stdin } = request;
  return createHash('sha256').update(JSON.stringify([view, refsDigest, command.argv, command.gitProtocol ?? null])).update('\0').update(stdin).digest('hex');
}
