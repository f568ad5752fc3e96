import type { Generated } from 'kysely';
import type { FenceColumn, Millis } from './columns.js';
import type { FeedSchema } from './feed-tables.js';
import type { ImportSchema } from './import-tables.js';

/** Where a registry row stands: `pending → started → synced | failed`. */
export type RegistryState = 'pending' | 'started' | 'synced' | 'failed';

/** All registry states, in lifecycle order. */
export const REGISTRY_STATES: readonly RegistryState[] = ['pending', 'started', 'synced', 'failed'];

/** The outcome of the last checksum verification of a mirror. */
export type VerificationState = 'unverified' | 'verified' | 'mismatch';

/** What asked for a sync attempt. */
export type SyncTrigger = 'schedule' | 'manual' | 'webhook' | 'cli' | 'library' | 'retry' | 'verify';

/** How a sync attempt ended (null while it runs). */
export type AttemptResult = 'synced' | 'noop' | 'failed' | 'missing' | 'skipped';

/** The `sources` table. Booleans are integers 0/1. */
export interface SourcesTable {
  id: Generated<number>;
  name: string;
  url: string;
  credential_ref: string | null;
  interval_ms: number | null;
  cron: string | null;
  enabled: number;
  created_at: Millis;
  updated_at: Millis;
  /** Normalised `host/owner/repo` of the URL, for webhook matching (replication/store/match-key.ts). */
  match_key: string | null;
  /** The storage shard holding the mirror (migration 008); null until placed. */
  shard_id: string | null;
  /** Moves of the source between shards so far: writes carry it (a fence for placement). */
  placement_epoch: Generated<number>;
  /** The shard it is being moved to (migration 008), or null. */
  move_to: string | null;
}

/** The `shards` table: one row per storage root a worker owns (migration 008). */
export interface ShardsTable {
  id: string;
  state: string;
  node: string;
  data_dir: string;
  weight: number;
  bytes: number;
  registered_at: Millis;
  last_seen_at: Millis;
  /** The worker's internal endpoint (migration 010), or null. */
  endpoint: string | null;
}

/** The `registry` table: one row per source, deleted with it. */
export interface RegistryTable {
  source_id: number;
  state: RegistryState;
  retry_count: number;
  next_retry_at: Millis | null;
  /** When the scheduler next looks at the row (migration 009); null: only on request. */
  next_run_at: Millis | null;
  last_attempt_at: Millis | null;
  last_synced_at: Millis | null;
  last_failure: string | null;
  last_failure_at: Millis | null;
  checksum: string | null;
  verification_state: VerificationState;
  verified_at: Millis | null;
  missing_on_primary: number;
  requested_seq: number;
  completed_seq: number;
  target_seq: number;
  fence: FenceColumn;
  mirror_path: string | null;
  updated_at: Millis;
}

/** The `sync_attempts` table: the last attempts of each source. */
export interface SyncAttemptsTable {
  id: Generated<number>;
  source_id: number;
  trigger: SyncTrigger;
  started_at: Millis;
  finished_at: Millis | null;
  result: AttemptResult | null;
  error: string | null;
  refs_changed: number | null;
  duration_ms: number | null;
  fence: FenceColumn;
}

/** The `webhook_deliveries` table: delivery ids seen lately, so a replay is not acted on twice (webhook-deliveries.ts). */
export interface WebhookDeliveriesTable {
  provider: string;
  delivery_id: string;
  received_at: Millis;
  expires_at: Millis;
}

/** The Kysely database interface of the registry store. */
export interface Schema extends ImportSchema, FeedSchema {
  sources: SourcesTable;
  registry: RegistryTable;
  sync_attempts: SyncAttemptsTable;
  webhook_deliveries: WebhookDeliveriesTable;
  shards: ShardsTable;
}

/** An upstream repository and how often to sync it. */
export interface Source {
  id: number;
  name: string;
  url: string;
  /** A reference such as `env:GITHUB_TOKEN`, never the secret itself. */
  credentialRef: string | null;
  /** Null: the default schedule applies. */
  intervalMs: number | null;
  cron: string | null;
  enabled: boolean;
  createdAt: Date;
  updatedAt: Date;
  /** The storage shard holding the mirror; null until placed (see cluster/placement.ts). */
  shard: string | null;
  /** How many times the source moved between shards: its writes carry it. */
  placementEpoch: number;
  /** The shard it is moving to (`shard reassign`, `shard drain`), or null. */
  moveTo: string | null;
}

/** The durable truth about one source's replication. */
export interface RegistryRow {
  sourceId: number;
  state: RegistryState;
  retryCount: number;
  nextRetryAt: Date | null;
  lastAttemptAt: Date | null;
  lastSyncedAt: Date | null;
  /** Already redacted by the caller; at most 2000 characters. */
  lastFailure: string | null;
  lastFailureAt: Date | null;
  checksum: string | null;
  verificationState: VerificationState;
  verifiedAt: Date | null;
  missingOnPrimary: boolean;
  /** Incremented by every request. */
  requestedSeq: number;
  /** The requestedSeq the last successful sync started from. */
  completedSeq: number;
  /** The requestedSeq the running (or last started) sync is serving. */
  targetSeq: number;
  /** Fence of the last lease holder that wrote the row. */
  fence: bigint | null;
  mirrorPath: string | null;
}

/** A source together with its registry row. */
export type SourceWithRegistry = Source & { registry: RegistryRow };

/** One recorded sync attempt. */
export interface SyncAttempt {
  id: number;
  sourceId: number;
  trigger: SyncTrigger;
  startedAt: Date;
  finishedAt: Date | null;
  result: AttemptResult | null;
  error: string | null;
  refsChanged: number | null;
  durationMs: number | null;
  fence: bigint | null;
}
