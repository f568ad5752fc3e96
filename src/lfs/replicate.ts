import { removeStaleDownloads } from '../egress/download.js';
import type { CredentialStore } from '../credentials/store.js';
import type { EgressPolicy } from '../egress/policy.js';
import { localRefs } from '../git/refs.js';
import type { GitRunner } from '../git/runner.js';
import type { Logger } from '../logging/logger.js';
import type { LfsMetrics } from './metrics.js';
import type { SyncedMirror, SyncFollower } from '../replication/api.js';
import type { Source } from '../store/types.js';
import { lfsEndpoint } from './endpoint.js';
import type { ObjectFiles } from './files.js';
import type { LfsPointer } from './pointer.js';
import { scanPointers } from './scan.js';
import type { LfsObjectRepository, LfsObjectState } from './store/objects.js';
import { downloadObject, requestBatch, type BatchAnswer, type UpstreamLfs } from './upstream.js';

/** Objects asked for in one batch request (the batch API's usual limit). */
const BATCH_SIZE = 100;

export interface LfsReplicatorOptions {
  runner: GitRunner;
  egress: EgressPolicy;
  credentials: CredentialStore;
  objects: LfsObjectRepository;
  files: ObjectFiles;
  logger: Logger;
  metrics: LfsMetrics;
  settings: { lfsMaxObjectBytes: number; lfsConcurrency: number; lfsTimeoutMs: number };
}

/** What one run did, for its log line. */
interface RunCounts {
  scanned: number;
  found: number;
  invalid: number;
  stored: number;
  shared: number;
  missing: number;
  failed: number;
  refused: number;
}

/**
 * Replicates a source's Git LFS objects after each of its syncs (a
 * SyncFollower: in the syncing process, under the source's lease).
 *
 * - **Scan**: only the history that is new since the last scan (ref tips
 *   not scanned before, with the scanned ones excluded), and nothing when
 *   the refs checksum is the one scanned last (a no-op sync). Pointers are
 *   found by content, as git-lfs's own scanner finds them, not through
 *   `.gitattributes`: the attributes vary per directory and per commit
 *   (and are often fixed after the files were committed), a blob in the
 *   exact pointer format is what git-lfs smudges whenever an attribute
 *   routes its path through the filter, and the cost of a pointer committed
 *   without one is one verified download of an object the upstream has.
 * - **Fetch**: what the source lacks, in batches of 100 through the batch
 *   API, `lfsConcurrency` downloads at once; an object already stored for
 *   another source is shared, not fetched again. Pointers over the size cap
 *   are `refused` without a request; objects the upstream answers 404/410
 *   for are `missing` (asked again after refs move); anything else is
 *   `failed` and retried after the next sync. None of it fails the sync.
 */
export class LfsReplicator implements SyncFollower {
  readonly name = 'lfs';

  constructor(private readonly options: LfsReplicatorOptions) {}

  async afterSync(synced: SyncedMirror, signal: AbortSignal): Promise<void> {
    const { objects, files, settings } = this.options;
    const { source, mirror, result } = synced;
    // What a download killed with its process left (a live one writes all the time, and gives up after its timeout).
    await removeStaleDownloads(files.temporaryDir, 2 * settings.lfsTimeoutMs);
    const counts: RunCounts = { scanned: 0, found: 0, invalid: 0, stored: 0, shared: 0, missing: 0, failed: 0, refused: 0 };
    const previous = await objects.scanned(source.id);
    const refsMoved = previous?.checksum !== result.checksum;
    if (refsMoved) await this.#scan({ source, mirror, checksum: result.checksum, previous: previous?.tips ?? [], counts }, signal);
    const wanted = await objects.toFetch(source.id, { maxBytes: this.options.settings.lfsMaxObjectBytes, missingToo: refsMoved ? 'missing too' : 'not missing' });
    if (wanted.length > 0) await this.#fetch({ source, mirror, wanted, counts }, signal);
    if (counts.scanned + wanted.length === 0) return;
    this.options.logger.info(
      { event: 'lfs_sync', source: source.name, ...counts },
      `lfs ${source.name}: ${counts.found} pointers in new history, ${counts.stored} objects downloaded, ${counts.shared} shared, ${counts.missing} missing, ${counts.failed} failed, ${counts.refused} over the size cap`,
    );
  }

  /** Scans the history new since `previous` and records the pointers found; then records the tips as scanned. */
  async #scan(run: { source: Source; mirror: string; checksum: string; previous: readonly string[]; counts: RunCounts }, signal: AbortSignal): Promise<void> {
    const { runner, objects, logger, settings } = this.options;
    const { source, mirror, previous, counts } = run;
    const tips = [...new Set((await localRefs(runner, mirror, { signal })).values())].sort();
    const before = new Set(previous);
    const fresh = tips.filter((tip) => !before.has(tip));
    if (fresh.length > 0) {
      const found = await scanPointers(runner, mirror, { tips: fresh, scanned: previous, signal, timeoutMs: settings.lfsTimeoutMs });
      counts.scanned = fresh.length;
      counts.found = found.pointers.length;
      counts.invalid = found.invalid.length;
      for (const { blob, reason } of found.invalid.slice(0, 10)) {
        logger.warn({ event: 'lfs_invalid_pointer', source: source.name, blob, reason }, `lfs ${source.name}: blob ${blob} looks like an LFS pointer but is not one (${reason}); ignored`);
      }
      await objects.reference(source.id, found.pointers, new Date());
    }
    // Recorded once the pointers are: a crash in between scans this history again.
    await objects.saveScan(source.id, { tips, checksum: run.checksum }, new Date());
  }

  /** Fetches `wanted` (the source's objects not stored for it yet), recording each one's outcome. */
  async #fetch(run: { source: Source; mirror: string; wanted: readonly LfsPointer[]; counts: RunCounts }, signal: AbortSignal): Promise<void> {
    const { files, settings } = this.options;
    const { source, counts } = run;
    const toAsk: LfsPointer[] = [];
    for (const pointer of run.wanted) {
      if (pointer.size > settings.lfsMaxObjectBytes) await this.#record(source, pointer, { state: 'refused', error: `${pointer.size} bytes is over FORGESYNC_LFS_MAX_OBJECT_BYTES (${settings.lfsMaxObjectBytes})` }, counts);
      else if (await files.has(pointer)) await this.#record(source, pointer, { state: 'present' }, counts, 'shared');
      else toAsk.push(pointer);
    }
    if (toAsk.length === 0) return;
    const upstream = await this.#upstream(source, run.mirror, signal);
    if (typeof upstream === 'string') {
      for (const pointer of toAsk) await this.#record(source, pointer, { state: 'failed', error: upstream }, counts);
      return;
    }
    for (let start = 0; start < toAsk.length; start += BATCH_SIZE) {
      signal.throwIfAborted();
      const chunk = toAsk.slice(start, start + BATCH_SIZE);
      let answers: Map<string, BatchAnswer>;
      try {
        answers = await requestBatch(upstream, chunk);
      } catch (error) {
        signal.throwIfAborted();
        for (const pointer of chunk) await this.#record(source, pointer, { state: 'failed', error: messageOf(error) }, counts);
        continue;
      }
      await forEachAtMost(settings.lfsConcurrency, chunk, (pointer) => this.#fetchOne(source, upstream, pointer, answers.get(pointer.oid), counts), signal);
    }
  }

  /** One object, as the batch answer says. */
  async #fetchOne(source: Source, upstream: UpstreamLfs, pointer: LfsPointer, answer: BatchAnswer | undefined, counts: RunCounts): Promise<void> {
    if (!answer) return this.#record(source, pointer, { state: 'failed', error: 'the batch answer did not mention the object' }, counts);
    if ('error' in answer) {
      const gone = answer.error.code === 404 || answer.error.code === 410;
      return this.#record(source, pointer, { state: gone ? 'missing' : 'failed', error: `the LFS server answered ${answer.error.code}: ${answer.error.message}` }, counts);
    }
    // Another source may have stored it meanwhile.
    if (await this.options.files.has(pointer)) return this.#record(source, pointer, { state: 'present' }, counts, 'shared');
    try {
      const outcome = await downloadObject(upstream, pointer, answer, this.options.files);
      await this.#record(source, pointer, outcome.stored ? { state: 'present' } : { state: 'failed', error: outcome.error }, counts, 'stored');
    } catch (error) {
      upstream.signal.throwIfAborted();
      await this.#record(source, pointer, { state: 'failed', error: messageOf(error) }, counts);
    }
  }

  /** The source's LFS server and credential, or why there is none. */
  async #upstream(source: Source, mirror: string, signal: AbortSignal): Promise<UpstreamLfs | string> {
    const { runner, egress, credentials, settings } = this.options;
    const endpoint = await lfsEndpoint(runner, mirror, source.url, signal);
    if (!endpoint) return 'the upstream has no LFS server: its URL is not http(s) and .lfsconfig names no lfs.url';
    let credential;
    try {
      credential = source.credentialRef ? await credentials.tokenFor(source.credentialRef, source.url) : undefined;
    } catch (error) {
      return messageOf(error);
    }
    return { endpoint, policy: egress, credential, timeoutMs: settings.lfsTimeoutMs, signal };
  }

  async #record(source: Source, pointer: LfsPointer, outcome: { state: LfsObjectState; error?: string }, counts: RunCounts, how: 'stored' | 'shared' = 'stored'): Promise<void> {
    // A shared object is marked used first: a prune running meanwhile keeps it (see Lfs.prune).
    if (outcome.state === 'present' && how === 'shared') await this.options.files.touch(pointer.oid);
    await this.options.objects.setState(source.id, pointer.oid, outcome, new Date());
    const counted = outcome.state === 'present' ? how : outcome.state === 'pending' ? 'failed' : outcome.state;
    counts[counted]++;
    this.options.metrics.objects.inc({ outcome: counted });
    if (counted === 'stored') this.options.metrics.downloadedBytes.inc(pointer.size);
  }
}

/** An error's message without query strings (signed storage URLs carry credentials there). */
function messageOf(error: unknown): string {
  return String((error as Error)?.message ?? error).replace(/(https?:\/\/[^\s?#"']+)\?[^\s#"']*/g, '$1?…');
}

/** Runs `work` on each item, `limit` at a time; stops starting new ones once `signal` aborts. */
async function forEachAtMost<T>(limit: number, items: readonly T[], work: (item: T) => Promise<void>, signal: AbortSignal): Promise<void> {
  let next = 0;
  const lane = async (): Promise<void> => {
    while (next < items.length) {
      signal.throwIfAborted();
      await work(items[next++] as T);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, lane));
}
