import type { FastifyReply, FastifyRequest } from 'fastify';
import type { ShardReads } from '../cluster/api.js';
import type { LfsObjectRow, LfsObjectState, LfsSummary } from './store/objects.js';

export type { LfsObjectRow, LfsObjectState, LfsSummary } from './store/objects.js';

/** What `lfs fsck` found for one source: its stored objects hashed again. */
export interface LfsFsckReport {
  name: string;
  /** Objects the source has stored, all checked. */
  checked: number;
  ok: number;
  /** Stored with another size or hash: deleted, fetched again by the next sync (for every source that references them). */
  damaged: string[];
  /** Recorded as stored but not on this disk: fetched again by the next sync. */
  absent: string[];
}

/** What `lfs prune` deleted: the objects no source references any more, stored here and untouched for the grace period. */
export interface LfsPruneReport {
  deleted: number;
  bytes: number;
  /** Objects kept because some source references them, or because they were used within the grace period. */
  kept: number;
}

/** A request under `/git/<name>.git/info/lfs/`, already authenticated as a reader (the cloning module's git routes hand it over). */
export interface LfsHttpRequest {
  /** The source name the path names (not checked yet). */
  name: string;
  /** What follows `info/lfs/`: `objects/batch` or `objects/<oid>`. */
  path: string;
  request: FastifyRequest;
  reply: FastifyReply;
  /** Distributed mode: an object stored on another shard is streamed from that shard's worker; undefined answers from here. */
  shardFiles: ShardReads | undefined;
}

/**
 * What the rest of forgesync may ask of the lfs module: each source's LFS
 * objects in numbers (`status --json`'s `lfs`), the objects themselves,
 * re-verifying them, and serving them over the batch API.
 */
export interface LfsApi {
  /** `{ objects, bytes, missing }` of each source given, by id; zeros for a source without LFS objects. */
  summaries(sourceIds: readonly number[]): Promise<Map<number, LfsSummary>>;
  /** The LFS objects source `name` references, with where each stands (optionally only `states`). @throws SourceNotFoundError */
  objects(name: string, states?: readonly LfsObjectState[]): Promise<LfsObjectRow[]>;
  /** Hashes the stored objects of source `name` again; damaged or absent ones are fetched again by its next sync. @throws SourceNotFoundError */
  fsck(name: string): Promise<LfsFsckReport>;
  /**
   * Deletes the objects stored here that no source references (their
   * sources were removed) and that nothing used for `graceMs`.
   */
  prune(options: { graceMs: number }): Promise<LfsPruneReport>;
  /** Answers a Git LFS request (batch API, download); the caller checked that it may read. */
  serve(request: LfsHttpRequest): Promise<FastifyReply>;
}
