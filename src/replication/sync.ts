import { performance } from 'node:perf_hooks';
import { LeaseLostError } from '../leases/errors.js';
import { logLeaseSkip } from '../leases/skip.js';
import { writeFenced } from '../leases/fenced.js';
import type { Lease } from '../leases/lease.js';
import type { LeaseManager } from '../leases/manager.js';
import type { GitRunner } from '../git/runner.js';
import { RemoteNotFoundError } from '../git/errors.js';
import { syncMirror, type MirrorSyncResult, type SyncMirrorOptions } from '../git/mirror.js';
import type { Logger } from '../logging/logger.js';
import type { RegistryRepository, RequestCounters } from './store/registry.js';
import type { SourceRepository } from './store/sources.js';
import { refChange, sourceStateChange, type ChangeInput } from '../store/change-log.js';
import type { RegistryRow, Source, SourceWithRegistry, SyncTrigger } from '../store/types.js';
import { redactSecrets } from '../util/redact.js';
import { backoffDelay, type BackoffPolicy } from '../util/backoff.js';
import type { BoundToken } from '../credentials/store.js';
import { ownerName } from '../leases/owner.js';
import { ATTR, DB_SYSTEM_NAME, withSpan } from '../tracing/index.js';

/**
 * What one call to `sync()` ended with: `idle` when no request was waiting
 * (nothing to do, no lease taken), `noop` when a round found the upstream
 * unchanged, `lost` when the lease was lost (or the work was stopped).
 */
export type SyncOutcome = 'synced' | 'noop' | 'failed' | 'missing' | 'skipped' | 'lost' | 'gone' | 'idle' | 'elsewhere';

export interface SyncServiceOptions {
  sources: SourceRepository;
  registry: RegistryRepository;
  leases: LeaseManager;
  runner: GitRunner;
  /** The token of a credential for a URL (see CredentialStore.tokenFor). */
  tokenFor: (credential: string, url: string) => Promise<BoundToken>;
  logger: Logger;
  /** Root directory of the mirrors. */
  storage: string;
  /** Lease ttl; a heartbeat renews it every third. Short, so a crashed worker frees the source in seconds. */
  leaseTtlMs: number;
  backoff: BackoffPolicy;
  /** Called after each finished attempt (metrics). */
  onAttempt?: (event: { trigger: SyncTrigger; result: SyncOutcome; durationMs: number }) => void;
  /** Called when the lease was busy (metrics). */
  onSkip?: () => void;
  /** Receives git's progress lines (clone/fetch), e.g. to draw them on a terminal. */
  onProgress?: (source: Source, line: string) => void;
  /** Called when work is left pending after the lease is released, to nudge a worker. */
  onPending?: (source: Source) => void;
  /** Called after changes were appended to the change log (the feeds deliver them). */
  onChanges?: () => void;
  /**
   * The storage shard this process's mirrors are on. A source placed on
   * another shard (or moving away) is not synced here ('elsewhere'); one
   * moving here is synced here and then placed here. Unset: no placement.
   */
  localShard?: string;
  /** Called for a source whose job reached a shard that does not hold it (to send it where it lives). */
  onElsewhere?: (source: Source) => void;
  /** Runs after each attempt that left the mirror synced (moved or not), still under the lease (see SyncFollower). */
  afterSync?: (synced: SyncedMirror, signal: AbortSignal) => Promise<void>;
}

/** A mirror a sync has just left synced, as the work that follows it sees it. */
export interface SyncedMirror {
  source: Source;
  /** Absolute path of the bare mirror. */
  mirror: string;
  /** The sync's result: what moved, the mirror's checksum. */
  result: MirrorSyncResult;
}

/**
 * Work that follows a source's sync on its mirror (fetching its LFS objects,
 * housekeeping), so that it never runs beside a sync or a removal of that
 * mirror. Contract: `afterSync` runs after every attempt that left the
 * mirror synced, whether refs moved or not (so work a crash interrupted is
 * caught up by the next sync), in the process that synced it, while the
 * source's lease is held and heartbeated; `signal` aborts when the lease is
 * lost or the process stops, and the follower must then stop soon. A
 * follower's failure is logged and never fails the sync; the next sync
 * calls it again.
 */
export interface SyncFollower {
  /** Names the follower in log lines. */
  readonly name: string;
  afterSync(synced: SyncedMirror, signal: AbortSignal): Promise<void>;
}

/** How this process's sync of a source relates to its placement: the epoch its writes carry, whether it moves the source here. */
type Placement = { epoch?: number; movedTo?: string } | 'elsewhere';

/** One round of a sync (see SyncService's #round). */
interface Round {
  sourceId: number;
  trigger: SyncTrigger;
  lease: Lease;
  signal: AbortSignal;
  known: SourceWithRegistry | undefined;
  placement: Exclude<Placement, 'elsewhere'>;
}

/** How one attempt ended. */
type AttemptOutcome = 'synced' | 'noop' | 'failed' | 'missing' | 'lost';

/** The lease key of one source's mirror. */
export const syncLeaseKey = (sourceId: number) => `sync:repository:${sourceId}`;

/** The error recorded on an attempt that lost its lease (the fence rejected its write, or the lease signal aborted it). */
const leaseLostError = (error?: string) => `lease lost: ${error ?? 'another holder took over'}`;

/** How a source's last finished sync ended, as the change log names it: `synced`, `failed`, or null before any. */
type SettledState = 'synced' | 'failed' | null;

/** The SettledState of the source whose registry row is `row`. */
function settledState(row: RegistryRow): SettledState {
  const synced = row.lastSyncedAt?.getTime() ?? null;
  const failed = row.lastFailureAt?.getTime() ?? null;
  if (failed !== null && (synced === null || failed > synced)) return 'failed';
  return synced === null ? null : 'synced';
}

/** The changes a successful sync records: its ref changes, and the source's state when it was not synced before. */
function syncChanges(source: string, previous: 'synced' | 'failed' | null, synced: MirrorSyncResult): ChangeInput[] {
  const changes = synced.refChanges.map((change) => refChange(source, change));
  if (previous !== 'synced') changes.push(sourceStateChange(source, 'synced', previous, null));
  return changes;
}

/** Rounds a holder can chain without giving others a turn (requests arriving mid-sync). */
const MAX_ROUNDS = 5;

/**
 * Syncs one source's mirror under its exclusive lease, the Geo way but
 * without losing requests: every state change is fenced, and requests that
 * arrive while a sync runs are served by another round before the lease
 * is let go.
 */
export class SyncService {
  /** The registry's database, as the spans of its statements name it. */
  readonly #dbSystem: { [ATTR.dbSystemName]: string };

  constructor(private readonly options: SyncServiceOptions) {
    this.#dbSystem = { [ATTR.dbSystemName]: DB_SYSTEM_NAME[options.registry.dialect] };
  }

  /**
   * Serves the source's unserved requests, if it has any: under its lease if
   * nobody else holds it ('skipped' otherwise, with a log line naming the
   * holder), in further rounds for requests recorded meanwhile. `shutdown`
   * aborts it like a lost lease would, leaving the row pending. A nudge that
   * finds every request served (a duplicate job) does nothing: `idle`.
   */
  async sync(sourceId: number, trigger: SyncTrigger, shutdown?: AbortSignal): Promise<SyncOutcome> {
    const { leases, logger, leaseTtlMs } = this.options;
    const source = await this.options.sources.findById(sourceId);
    if (!source) return 'gone';
    if (source.registry.requestedSeq <= source.registry.completedSeq) return 'idle';
    const placement = this.#placement(source);
    if (placement === 'elsewhere') {
      logger.info({ event: 'sync_elsewhere', source: source.name, shard: source.shard, move_to: source.moveTo, local_shard: this.options.localShard }, `sync ${source.name}: held by shard ${source.moveTo ?? source.shard}, not this one`);
      this.options.onElsewhere?.(source);
      return 'elsewhere';
    }
    const key = syncLeaseKey(sourceId);
    const run = await withSpan('sync', { [ATTR.source]: source.name, [ATTR.syncTrigger]: trigger }, (span) => leases.tryWithLease(
      key,
      {
        ttlMs: leaseTtlMs,
        owner: ownerName(`sync ${source.name}`),
        ...(shutdown ? { signal: shutdown } : {}),
        onRenewError: (error) => logger.warn({ event: 'lease_renew_failed', lease_key: key, err: String(error) }, 'lease renewal failed; retrying'),
      },
      async (lease, signal) => {
        let outcome: SyncOutcome = 'noop';
        try {
          // The first round may use the source read above; later rounds read it again.
          let known: SourceWithRegistry | undefined = source;
          for (let round = 0; round < MAX_ROUNDS; round++) {
            const result = await withSpan('sync round', { [ATTR.source]: source.name, 'forgesync.sync.round': round }, () => this.#round({ sourceId: source.id, trigger, lease, signal, known, placement }));
            known = undefined;
            outcome = result.outcome;
            if (!result.requestPending) break;
          }
        } finally {
          if (signal.aborted) await this.options.registry.releaseStarted(source.id, lease.fence).catch(() => false);
        }
        span.setAttributes({ [ATTR.syncOutcome]: outcome });
        return outcome;
      },
    ));
    if (!run.ran) {
      logLeaseSkip(logger, key, run.holder, { source: source.name });
      this.options.onSkip?.();
      return 'skipped';
    }
    await this.#nudgeIfPending(source);
    return run.value;
  }

  /**
   * One pass: started → fetch → checksum → synced, or failed with backoff.
   * `known` is the source as read (with its registry row) before the lease
   * was taken; it is used only if no request was recorded since then.
   * `requestPending`: the row was written synced and a request is still
   * unserved (it arrived during the pass), so another round is due.
   */
  async #round(round: Round): Promise<{ outcome: SyncOutcome; requestPending: boolean }> {
    const { sourceId, lease, signal, known } = round;
    const startedAt = performance.now();
    const started = await withSpan('registry start', { [ATTR.dbOperationName]: 'startSync', ...this.#dbSystem }, () => this.#startAttempt(round));
    if (!started) return { outcome: 'lost', requestPending: false };
    const { row, attemptId } = started;
    const previous = settledState(row);
    // Whatever the requests up to targetSeq asked for (a URL change records one, in the same
    // transaction) must be seen by this pass: the source read before the lease still shows
    // it when no request came after that read, otherwise the source is read again.
    const source = known && known.registry.requestedSeq === row.targetSeq ? known : await this.options.sources.findById(sourceId);
    if (!source) return { outcome: 'gone', requestPending: false };
    let token: string | undefined;
    let result: MirrorSyncResult | undefined;
    let outcome: AttemptOutcome;
    let error: string | undefined;
    let requestPending = false;
    let attemptFinished = false;
    try {
      const bound = source.credentialRef ? await this.options.tokenFor(source.credentialRef, source.url) : undefined;
      token = bound?.token;
      const synced = await withSpan('git mirror sync', { [ATTR.source]: source.name }, () => syncMirror(this.#mirrorOptions({ source, bound, token, signal })));
      result = synced;
      const counters = await withSpan('registry write', { [ATTR.dbOperationName]: 'finishSync', ...this.#dbSystem, [ATTR.source]: source.name }, () => this.#recordSynced({ round, source, row, attemptId, previous, synced }));
      attemptFinished = true;
      outcome = !counters ? 'lost' : synced.action === 'noop' ? 'noop' : 'synced';
      if (counters && (synced.refChanges.length > 0 || previous !== 'synced')) this.options.onChanges?.();
      requestPending = counters !== null && counters.requestedSeq > counters.completedSeq;
      if (counters && this.options.afterSync) await this.options.afterSync({ source, mirror: synced.path, result: synced }, signal);
    } catch (caught) {
      const reason = redactSecrets(String((caught as Error)?.message ?? caught), [token]);
      error = reason;
      if (signal.aborted) outcome = 'lost';
      else outcome = await withSpan('registry write', { [ATTR.dbOperationName]: 'finishFailed', ...this.#dbSystem, [ATTR.source]: source.name }, () => this.#recordFailed({ round, source, row, previous, error: reason, caught }));
    }
    const durationMs = performance.now() - startedAt;
    if (!attemptFinished) {
      await this.options.registry.finishAttempt(attemptId, {
        result: outcome === 'lost' ? 'failed' : outcome,
        error: outcome === 'lost' ? leaseLostError(error) : error,
        refsChanged: result?.refsChanged,
        now: new Date(),
      });
    }
    this.#logAttempt({ round, source, outcome, durationMs, result, error });
    return { outcome, requestPending };
  }

  /**
   * Marks the row started and records the attempt (one transaction on SQLite). Refused (null)
   * when the row carries a higher fence: then the lease is stale, or the lease store
   * lost its counters and the fence is raised above the row's (see writeFenced).
   */
  #startAttempt({ sourceId, trigger, lease, placement }: Round): Promise<{ row: RegistryRow; attemptId: number } | null> {
    const { registry } = this.options;
    return writeFenced(
      lease,
      (fence) => registry.startSync(sourceId, fence, { trigger, now: new Date(), epoch: placement.epoch }),
      async () => (await registry.find(sourceId))?.fence ?? null,
    ).catch((error: unknown) => {
      if (error instanceof LeaseLostError) return null;
      throw error;
    });
  }

  /** What syncMirror is asked for one source: its credential's token, allowed only where the credential is bound. */
  #mirrorOptions({ source, bound, token, signal }: { source: SourceWithRegistry; bound: BoundToken | undefined; token: string | undefined; signal: AbortSignal }): SyncMirrorOptions {
    const { logger } = this.options;
    const onProgress = this.options.onProgress;
    return {
      runner: this.options.runner,
      storage: this.options.storage,
      id: source.id,
      name: source.name,
      url: source.url,
      token,
      // A redirect may take the token only to hosts its credential is bound to.
      ...(bound ? { tokenAllowed: (url: URL) => bound.allows(url) } : {}),
      signal,
      ...(onProgress ? { onProgress: (line: string) => onProgress(source, line) } : {}),
      // Each one means a git was killed mid-update here earlier: worth a look if it recurs.
      onStaleLock: (lock) =>
        logger.warn(
          { event: 'stale_git_lock_removed', source: source.name, path: lock.path, age_ms: lock.ageMs },
          `sync ${source.name}: removed stale git lock ${lock.path} (${Math.round(lock.ageMs / 1000)} s old) left by a killed git`,
        ),
    };
  }

  /**
   * Records the sync and finishes its attempt (one transaction on SQLite); the counters as
   * the write left them say whether a request arrived meanwhile (null: the fence refused it).
   */
  #recordSynced(end: { round: Round; source: SourceWithRegistry; row: RegistryRow; attemptId: number; previous: SettledState; synced: MirrorSyncResult }): Promise<RequestCounters | null> {
    const { round, source, row, attemptId, previous, synced } = end;
    const now = new Date();
    return this.options.registry.finishSync(round.sourceId, round.lease.fence, {
      targetSeq: row.targetSeq,
      checksum: synced.checksum,
      verified: synced.verified,
      mirrorPath: synced.path,
      now,
      ...round.placement,
      attemptId,
      attempt: (written) => ({
        result: !written ? 'failed' : synced.action === 'noop' ? 'noop' : 'synced',
        error: written ? undefined : leaseLostError(),
        refsChanged: synced.refsChanged,
        now,
      }),
      changes: syncChanges(source.name, previous, synced),
    });
  }

  /** Records a failed sync with its backoff (the longest for a missing upstream); says which failure it was. */
  async #recordFailed(end: { round: Round; source: SourceWithRegistry; row: RegistryRow; previous: SettledState; error: string; caught: unknown }): Promise<'missing' | 'failed'> {
    const { round, source, row, previous, error, caught } = end;
    const { placement } = round;
    const missing = caught instanceof RemoteNotFoundError;
    const delay = missing ? this.options.backoff.maxMs : backoffDelay(row.retryCount + 1, this.options.backoff);
    const changes = previous === 'failed' ? [] : [sourceStateChange(source.name, 'failed', previous, error)];
    const failure = { error, missing, nextRetryAt: new Date(Date.now() + delay), now: new Date(), ...(placement.epoch !== undefined ? { epoch: placement.epoch } : {}), changes };
    if (await this.options.registry.finishFailed(round.sourceId, round.lease.fence, failure)) {
      if (changes.length > 0) this.options.onChanges?.();
    }
    return missing ? 'missing' : 'failed';
  }

  /** The attempt's log line, and its metrics. */
  #logAttempt(attempt: { round: Round; source: SourceWithRegistry; outcome: AttemptOutcome; durationMs: number; result: MirrorSyncResult | undefined; error: string | undefined }): void {
    const { round, source, outcome, durationMs, result, error } = attempt;
    const { trigger, lease } = round;
    this.options.logger.info(
      {
        event: 'sync',
        source: source.name,
        trigger,
        duration_s: Math.round(durationMs) / 1000,
        result: outcome,
        fence: lease.fence.toString(),
        refs_changed: result?.refsChanged ?? 0,
        action: result?.action,
        ...(error ? { error } : {}),
      },
      `sync ${source.name}: ${outcome}`,
    );
    this.options.onAttempt?.({ trigger, result: outcome, durationMs });
  }

  /** Whether this process syncs `source` (see SyncServiceOptions.localShard). */
  #placement(source: Source): Placement {
    const here = this.options.localShard;
    if (here === undefined || source.shard === null) return {};
    if (source.moveTo === here) return { epoch: source.placementEpoch, movedTo: here };
    if (source.shard === here && source.moveTo === null) return { epoch: source.placementEpoch };
    return 'elsewhere';
  }

  /** A request may have landed between our last look and the release: hand it on. */
  async #nudgeIfPending(source: Source): Promise<void> {
    if (await this.options.registry.hasPendingRequest(source.id)) this.options.onPending?.(source);
  }
}

