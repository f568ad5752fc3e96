import { performance } from 'node:perf_hooks';
import { describeHolder, skipMessage } from '../leases/errors.js';
import { startHeartbeat } from '../leases/heartbeat.js';
import type { Lease } from '../leases/lease.js';
import type { LeaseManager } from '../leases/manager.js';
import type { GitRunner } from '../git/runner.js';
import { RemoteNotFoundError } from '../git/errors.js';
import { syncMirror, type MirrorSyncResult } from '../git/mirror.js';
import type { Logger } from '../logging/logger.js';
import type { RegistryRepository } from '../store/registry.js';
import type { SourceRepository } from '../store/sources.js';
import type { Source } from '../store/types.js';
import type { SyncTrigger } from '../jobs/transport.js';
import { redactSecrets } from '../util/redact.js';
import { backoffDelay, type BackoffPolicy } from './backoff.js';
import type { CredentialResolver } from './credentials.js';

/** What one call to `sync()` ended with. */
export type SyncOutcome = 'synced' | 'noop' | 'failed' | 'missing' | 'skipped' | 'lost' | 'gone';

export interface SyncServiceOptions {
  sources: SourceRepository;
  registry: RegistryRepository;
  leases: LeaseManager;
  runner: GitRunner;
  credentials: CredentialResolver;
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
}

/** The lease key of one source's mirror. */
export const syncLeaseKey = (sourceId: number) => `sync:repository:${sourceId}`;

/** Rounds a holder can chain without giving others a turn (requests arriving mid-sync). */
const MAX_ROUNDS = 5;

/**
 * Syncs one source's mirror under its exclusive lease, the Geo way but
 * without losing requests: every state change is fenced, and requests that
 * arrive while a sync runs are served by another round before the lease
 * is let go.
 */
export class SyncService {
  constructor(private readonly options: SyncServiceOptions) {}

  async sync(sourceId: number, trigger: SyncTrigger, shutdown?: AbortSignal): Promise<SyncOutcome> {
    const { leases, logger, leaseTtlMs } = this.options;
    const source = await this.options.sources.getById(sourceId);
    if (!source) return 'gone';
    const key = syncLeaseKey(sourceId);
    const attempt = await leases.attempt(key, { ttlMs: leaseTtlMs, owner: `sync ${source.name}`.slice(0, 128) });
    if (!attempt.lease) {
      logger.info(
        { event: 'lease_skip', source: source.name, lease_key: key, holder: attempt.holder ? describeHolder(attempt.holder) : null },
        `Cannot obtain an exclusive lease. There must be another instance already in execution. ${skipMessage(attempt.holder)}`,
      );
      this.options.onSkip?.();
      return 'skipped';
    }
    const lease = attempt.lease;
    const stopHeartbeat = startHeartbeat(lease, Math.max(1, Math.floor(leaseTtlMs / 3)), (error) =>
      logger.warn({ event: 'lease_renew_failed', lease_key: key, err: String(error) }, 'lease renewal failed; retrying'),
    );
    const signal = shutdown ? AbortSignal.any([lease.signal, shutdown]) : lease.signal;
    let outcome: SyncOutcome = 'noop';
    try {
      for (let round = 0; round < MAX_ROUNDS; round++) {
        outcome = await this.#round(source.id, trigger, lease, signal);
        if (outcome !== 'synced' && outcome !== 'noop') break;
        const row = await this.options.registry.get(source.id);
        if (!row || row.requestedSeq <= row.completedSeq) break;
      }
    } finally {
      stopHeartbeat();
      if (signal.aborted) await this.options.registry.releaseStarted(source.id, lease.fence).catch(() => false);
      await lease.release().catch(() => undefined);
    }
    await this.#nudgeIfPending(source);
    return outcome;
  }

  /** One pass: started → fetch → checksum → synced, or failed with backoff. */
  async #round(sourceId: number, trigger: SyncTrigger, lease: Lease, signal: AbortSignal): Promise<SyncOutcome> {
    const { registry, logger } = this.options;
    const started = performance.now();
    const row = await registry.start(sourceId, lease.fence, new Date());
    if (!row) return 'lost';
    const source = await this.options.sources.getById(sourceId);
    if (!source) return 'gone';
    const attemptId = await registry.startAttempt(sourceId, trigger, lease.fence, new Date());
    let token: string | undefined;
    let result: MirrorSyncResult | undefined;
    let outcome: 'synced' | 'noop' | 'failed' | 'missing' | 'lost';
    let error: string | undefined;
    try {
      token = this.options.credentials.resolve(source.credentialRef);
      const onProgress = this.options.onProgress;
      result = await syncMirror({
        runner: this.options.runner,
        storage: this.options.storage,
        name: source.name,
        url: source.url,
        token,
        signal,
        ...(onProgress ? { onProgress: (line: string) => onProgress(source, line) } : {}),
      });
      const written = await registry.finishSynced(sourceId, lease.fence, {
        targetSeq: row.targetSeq,
        checksum: result.checksum,
        verified: result.verified,
        mirrorPath: result.path,
        now: new Date(),
      });
      outcome = !written ? 'lost' : result.action === 'noop' ? 'noop' : 'synced';
    } catch (caught) {
      error = redactSecrets(String((caught as Error)?.message ?? caught), [token]);
      if (signal.aborted) outcome = 'lost';
      else {
        const missing = caught instanceof RemoteNotFoundError;
        const delay = missing ? this.options.backoff.maxMs : backoffDelay(row.retryCount + 1, this.options.backoff);
        await registry.finishFailed(sourceId, lease.fence, { error, missing, nextRetryAt: new Date(Date.now() + delay), now: new Date() });
        outcome = missing ? 'missing' : 'failed';
      }
    }
    const durationMs = performance.now() - started;
    await registry.finishAttempt(attemptId, {
      result: outcome === 'lost' ? 'failed' : outcome,
      error: outcome === 'lost' ? `lease lost: ${error ?? 'another holder took over'}` : error,
      refsChanged: result?.refsChanged,
      now: new Date(),
    });
    logger.info(
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
    return outcome;
  }

  /** A request may have landed between our last look and the release: hand it on. */
  async #nudgeIfPending(source: Source): Promise<void> {
    const row = await this.options.registry.get(source.id);
    if (row && row.state === 'pending' && row.requestedSeq > row.completedSeq) this.options.onPending?.(source);
  }
}
