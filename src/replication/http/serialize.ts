import { basename } from 'node:path';
import type { SourceWithRegistry, SyncAttempt } from '../../store/types.js';
import { redactUrl } from '../../util/redact.js';
import type { ServerPaths } from '../../util/server-paths.js';
import type { AttemptJson, SourceJson } from './schemas.js';

/*
 * Domain objects → the JSON shapes of schemas.ts (ISO times, fences as decimal
 * strings, redacted URLs, no directory of the server: `forgesync status --json`,
 * the operator's, shows those).
 */

/** Serialises a source for the API; `paths` are hidden in its failure. */
export function sourceJson(source: SourceWithRegistry, paths: ServerPaths): SourceJson {
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
    lastFailure: paths.hide(row.lastFailure),
    lastFailureAt: iso(row.lastFailureAt),
    checksum: row.checksum,
    verificationState: row.verificationState,
    verifiedAt: iso(row.verifiedAt),
    missingOnPrimary: row.missingOnPrimary,
    // A mirror lies directly in its shard's mirrors directory: relative to it, the path is the mirror's name.
    mirrorPath: row.mirrorPath === null ? null : basename(row.mirrorPath),
    requestedSeq: row.requestedSeq,
    completedSeq: row.completedSeq,
    shard: source.shard,
    fence: row.fence?.toString() ?? null,
    createdAt: source.createdAt.toISOString(),
    updatedAt: source.updatedAt.toISOString(),
  };
}

/** Serialises a sync attempt for the API; `paths` are hidden in its error. */
export function attemptJson(attempt: SyncAttempt, paths: ServerPaths): AttemptJson {
  return {
    id: attempt.id,
    trigger: attempt.trigger,
    startedAt: attempt.startedAt.toISOString(),
    finishedAt: attempt.finishedAt?.toISOString() ?? null,
    durationMs: attempt.durationMs,
    result: attempt.result,
    error: paths.hide(attempt.error),
    refsChanged: attempt.refsChanged,
    fence: attempt.fence?.toString() ?? null,
  };
}

