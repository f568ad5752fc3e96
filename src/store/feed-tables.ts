import type { Generated } from 'kysely';
import type { Big, Defaulted, DefaultedBig, FenceColumn, Millis, NullableBig } from './columns.js';

/** The `change_log` table (see migration 007). */
export interface ChangeLogTable {
  seq: Big;
  type: string;
  module: string;
  scope: string;
  change_key: string;
  subject: string | null;
  data: string | null;
  import_id: NullableBig;
  object_type: string | null;
  object_key: string | null;
  recorded_at: Millis;
}

/** The `change_staged` table (PostgreSQL only, see migration 017): change_log's columns, numbered later. */
export interface ChangeStagedTable extends Omit<ChangeLogTable, 'seq'> {
  id: Generated<number | string>;
}

export interface ChangeHeadTable {
  id: number;
  seq: Big;
}

/** The `feeds` table (see migration 007). */
export interface FeedsTable {
  id: Generated<number>;
  name: string;
  sink: string;
  /** JSON array of type patterns; null: every type. */
  types: string | null;
  /** Glob over source and import names; null: all. */
  sources: string | null;
  /** Name of the feed secret the sink uses (never the secret; migration 012 renamed `secret_env`). */
  secret: string | null;
  batch: number;
  paused: Defaulted<number>;
  /** Why the sink was disabled (it answered 410 Gone); null while enabled. */
  disabled: string | null;
  cursor: Big;
  fence: FenceColumn;
  partial_requested: Defaulted<number>;
  replay_from: NullableBig;
  full_requested_at: NullableBig;
  full_started_at: NullableBig;
  full_head: NullableBig;
  /** JSON: where the running full sync stands (see feeds/full-sync.ts). */
  full_chunk: string | null;
  full_done: DefaultedBig;
  skips: DefaultedBig;
  failures: Defaulted<number>;
  retry_at: NullableBig;
  pending_at: NullableBig;
  last_error: string | null;
  delivered: DefaultedBig;
  /** JSON: `{ operation, startedAt, finishedAt, outcome, delivered }`. */
  last_run: string | null;
  created_at: Millis;
  updated_at: Millis;
}

/** `feed_pending` and `feed_dead_letters` rows. */
export interface FeedChangeTable {
  feed_id: number;
  seq: Big;
  change_key: string;
  attempts: number;
  next_at: Big;
  last_error: string | null;
}

export interface FeedSchema {
  change_log: ChangeLogTable;
  change_head: ChangeHeadTable;
  change_staged: ChangeStagedTable;
  feeds: FeedsTable;
  feed_pending: FeedChangeTable;
  feed_dead_letters: FeedChangeTable;
}
