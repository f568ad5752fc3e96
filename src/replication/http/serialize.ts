import type { SourceWithRegistry, SyncAttempt } from '../../store/types.js';
import { redactUrl } from '../../util/redact.js';
import type { AttemptJson, SourceJson } from './schemas.js';

/* Domain objects → the JSON shapes of schemas.ts (ISO times, fences as decimal strings, redacted URLs). */

/** Serialises a source for the API. */
export function sourceJson(source: SourceWithRegistry): SourceJson {
  const row = source.registry;
  const iso = (date: Date | null) => date?.toISOString() ?? null;
  return {
    id: source.id,
    name: source.name,
    url: redactUrl(source.url),
    state: row.state,
    enabled: source.enabled,
    credentialRef: source.credentialRef,
    intervalMs: source.intervalMs,
    cron: source.cron,
    retryCount: row.retryCount,
    nextRetryAt: iso(row.nextRetryAt),
    lastAttemptAt: iso(row.lastAttemptAt),
    lastSyncedAt: iso(row.lastSyncedAt),
    lastFailure: row.lastFailure,
    lastFailureAt: iso(row.lastFailureAt),
    checksum: row.checksum,
    verificationState: row.verificationState,
    verifiedAt: iso(row.verifiedAt),
    missingOnPrimary: row.missingOnPrimary,
    mirrorPath: row.mirrorPath,
    requestedSeq: row.requestedSeq,
    completedSeq: row.completedSeq,
    shard: source.shard,
    fence: row.fence?.toString() ?? null,
    createdAt: source.createdAt.toISOString(),
    updatedAt: source.updatedAt.toISOString(),
  };
}

/** Serialises a sync attempt for the API. */
export function attemptJson(attempt: SyncAttempt): AttemptJson {
  return {
    id: attempt.id,
    trigger: attempt.trigger,
    startedAt: attempt.startedAt.toISOString(),
    finishedAt: attempt.finishedAt?.toISOString() ?? null,
    durationMs: attempt.durationMs,
    result: attempt.result,
    error: attempt.error,
    refsChanged: attempt.refsChanged,
    fence: attempt.fence?.toString() ?? null,
  };
}

