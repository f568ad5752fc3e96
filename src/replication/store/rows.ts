import { sql, type Kysely } from 'kysely';
import type { AttemptResult, RegistryRow, RegistryState, Schema, Source, SyncAttempt, SyncTrigger, VerificationState } from '../../store/types.js';

/*
 * Row ↔ domain mapping shared by the repositories. Drivers disagree on
 * integer types (better-sqlite3: number; pg: number through the pool's int8
 * parser, or string), so every integer goes through Number() and every
 * fence through BigInt() of its text form.
 */

type Int = number | string | bigint;

/** Longest failure text kept in the registry and in attempts. */
export const MAX_FAILURE_LENGTH = 2000;

/** `text` cut to MAX_FAILURE_LENGTH characters (an ellipsis marks the cut). */
export function truncateFailure(text: string): string {
  return text.length <= MAX_FAILURE_LENGTH ? text : `${text.slice(0, MAX_FAILURE_LENGTH - 1)}…`;
}

const num = (value: Int): number => Number(value);
const numOrNull = (value: Int | null): number | null => (value === null ? null : Number(value));
const dateOrNull = (value: Int | null): Date | null => (value === null ? null : new Date(Number(value)));
const fenceOrNull = (value: Int | null): bigint | null => (value === null ? null : BigInt(value));

/** The fence column read as text so no driver rounds it through a double. */
export const fenceText = sql<string | null>`cast(fence as text)`.as('fence');

/** Registry columns, unqualified (none collides with a sources column), fence as text. */
export const registryColumns = [
  'source_id',
  'state',
  'retry_count',
  'next_retry_at',
  'last_attempt_at',
  'last_synced_at',
  'last_failure',
  'last_failure_at',
  'checksum',
  'verification_state',
  'verified_at',
  'missing_on_primary',
  'requested_seq',
  'completed_seq',
  'target_seq',
  'mirror_path',
] as const;

/** A registry row as selected with registryColumns + fenceText. */
export interface RegistryRecord {
  source_id: Int;
  state: RegistryState;
  retry_count: Int;
  next_retry_at: Int | null;
  last_attempt_at: Int | null;
  last_synced_at: Int | null;
  last_failure: string | null;
  last_failure_at: Int | null;
  checksum: string | null;
  verification_state: VerificationState;
  verified_at: Int | null;
  missing_on_primary: Int;
  requested_seq: Int;
  completed_seq: Int;
  target_seq: Int;
  fence: string | null;
  mirror_path: string | null;
}

/** A sources row. */
export interface SourceRecord {
  id: Int;
  name: string;
  url: string;
  credential_ref: string | null;
  interval_ms: Int | null;
  cron: string | null;
  enabled: Int;
  created_at: Int;
  updated_at: Int;
  shard_id: string | null;
  placement_epoch: Int;
  move_to: string | null;
}

export function toRegistryRow(row: RegistryRecord): RegistryRow {
  return {
    sourceId: num(row.source_id),
    state: row.state,
    retryCount: num(row.retry_count),
    nextRetryAt: dateOrNull(row.next_retry_at),
    lastAttemptAt: dateOrNull(row.last_attempt_at),
    lastSyncedAt: dateOrNull(row.last_synced_at),
    lastFailure: row.last_failure,
    lastFailureAt: dateOrNull(row.last_failure_at),
    checksum: row.checksum,
    verificationState: row.verification_state,
    verifiedAt: dateOrNull(row.verified_at),
    missingOnPrimary: num(row.missing_on_primary) === 1,
    requestedSeq: num(row.requested_seq),
    completedSeq: num(row.completed_seq),
    targetSeq: num(row.target_seq),
    fence: fenceOrNull(row.fence),
    mirrorPath: row.mirror_path,
  };
}

export function toSource(row: SourceRecord): Source {
  return {
    id: num(row.id),
    name: row.name,
    url: row.url,
    credentialRef: row.credential_ref,
    intervalMs: numOrNull(row.interval_ms),
    cron: row.cron,
    enabled: num(row.enabled) === 1,
    createdAt: new Date(num(row.created_at)),
    updatedAt: new Date(num(row.updated_at)),
    shard: row.shard_id,
    placementEpoch: num(row.placement_epoch),
    moveTo: row.move_to,
  };
}

/** sources joined with registry, every column needed for a SourceWithRegistry. */
export function selectSourcesWithRegistry(db: Kysely<Schema>) {
  return db
    .selectFrom('sources as s')
    .innerJoin('registry as r', 'r.source_id', 's.id')
    .select(['s.id', 's.name', 's.url', 's.credential_ref', 's.interval_ms', 's.cron', 's.enabled', 's.created_at', 's.updated_at', 's.shard_id', 's.placement_epoch', 's.move_to'])
    .select(registryColumns.map((c) => `r.${c}` as const))
    .select(sql<string | null>`cast(r.fence as text)`.as('fence'));
}

export function toSourceWithRegistry(row: SourceRecord & RegistryRecord) {
  return { ...toSource(row), registry: toRegistryRow(row) };
}

/**
 * selectSourcesWithRegistry of the sources `ids`, both tables by key: with
 * only `s.id` named, PostgreSQL hashes the whole registry for the join.
 */
export function selectSourcesByIds(db: Kysely<Schema>, ids: readonly number[]) {
  return selectSourcesWithRegistry(db).where('s.id', 'in', ids).where('r.source_id', 'in', ids);
}

/** `sources` in the order of `ids` (a query by ids returns them in any order). */
export function inIdOrder<T extends { id: number }>(sources: T[], ids: readonly number[]): T[] {
  const order = new Map(ids.map((id, index) => [id, index]));
  return sources.sort((a, b) => order.get(a.id)! - order.get(b.id)!);
}

/** A sync_attempts row, fence as text. */
export interface AttemptRecord {
  id: Int;
  source_id: Int;
  trigger: SyncTrigger;
  started_at: Int;
  finished_at: Int | null;
  result: AttemptResult | null;
  error: string | null;
  refs_changed: Int | null;
  duration_ms: Int | null;
  fence: string | null;
}

export function toAttempt(row: AttemptRecord): SyncAttempt {
  return {
    id: num(row.id),
    sourceId: num(row.source_id),
    trigger: row.trigger,
    startedAt: new Date(num(row.started_at)),
    finishedAt: dateOrNull(row.finished_at),
    result: row.result,
    error: row.error,
    refsChanged: numOrNull(row.refs_changed),
    durationMs: numOrNull(row.duration_ms),
    fence: fenceOrNull(row.fence),
  };
}
