import type { ColumnType, Generated } from 'kysely';
import type { Count, Defaulted, FenceColumn, Millis } from './columns.js';

/** Where an import stands. */
export type ImportState = 'pending' | 'started' | 'synced' | 'failed' | 'cancelled';
/** A full import, or an incremental sync of one that finished once. */
export type ImportMode = 'full' | 'sync';

/** The request counters an import keeps (its row: those from before progress rows; each progress row: what one batch added). */
export interface RequestCounterColumns {
  requests_total: Count;
  requests_counted: Count;
  requests_not_modified: Count;
  requests_retried: Count;
  rate_limit_waits: Count;
  rate_limit_wait_ms: Count;
}

/** The `imports` table (see migration 006). */
export interface ImportsTable extends RequestCounterColumns {
  id: Generated<number>;
  name: string;
  owner: string;
  repo: string;
  api_url: string;
  /** JSON array of credential names (never a secret). */
  credentials: string;
  concurrency: number;
  state: ImportState;
  stage: string;
  mode: ImportMode;
  run: Defaulted<number>;
  requested_seq: Count;
  completed_seq: Count;
  interval_ms: Millis | null;
  next_sync_at: Millis | null;
  created_at: Millis;
  started_at: Millis | null;
  finished_at: Millis | null;
  progress_at: Millis | null;
  last_synced_at: Millis | null;
  failure: string | null;
  repository_source: string | null;
  wiki_source: string | null;
  /** JSON array of the last rate budget seen per credential. */
  rate: Defaulted<string>;
  fence: FenceColumn;
  updated_at: Millis;
  /** Coordinator runs begun since one last ended or was asked for again (migration 013; see importer/run/coordinator.ts). */
  unfinished_runs: Defaulted<number>;
  /** When the scheduler resumes a run that failed for a transient cause; null: no automatic resume (migration 014). */
  retry_at: Millis | null;
  /** Runs in a row that failed for a transient cause (migration 014), which makes the pause before the next retry grow. */
  transient_failures: Defaulted<number>;
}

/** The `import_objects` table: GitHub's JSON per object, with the columns the compatible API filters on. */
export interface ImportObjectsTable {
  import_id: number;
  type: string;
  key: string;
  number: number | null;
  parent: number | null;
  state: string | null;
  created_at: string | null;
  updated_at: string | null;
  /** Lower-cased label names, each between newlines (`\nbug\nhelp wanted\n`), for `labels=` filters. */
  labels: string | null;
  comments: number | null;
  run: number;
  data: string;
  /** The list columns (migration 020, import-list-columns.ts): optional on insert, written by objects.ts. */
  sort_id: ColumnType<number | string | null, number | null | undefined, number | null>;
  listed_as: ColumnType<string | null, string | null | undefined, string | null>;
  milestone: ColumnType<number | string | null, number | null | undefined, number | null>;
  author: ColumnType<string | null, string | null | undefined, string | null>;
  assignees: ColumnType<string | null, string | null | undefined, string | null>;
  mentions: ColumnType<string | null, string | null | undefined, string | null>;
  head_label: ColumnType<string | null, string | null | undefined, string | null>;
  base_ref: ColumnType<string | null, string | null | undefined, string | null>;
}

/** The `import_cursors` table: where each collection's walk stands. */
export interface ImportCursorsTable {
  import_id: number;
  collection: string;
  run: number;
  done: number;
  next_url: string | null;
  walk_since: string | null;
  since: string | null;
  etag: string | null;
  last_id: string | null;
  pages: number;
  items: Count;
  updated_at: Millis;
}

/** A per-object job's state in the stage waiter. */
export type ImportJobState = 'pending' | 'done' | 'failed';

/** The `import_jobs` table: the stage waiter's per-object jobs. */
export interface ImportJobsTable {
  import_id: number;
  key: string;
  stage: string;
  run: number;
  state: ImportJobState;
  attempts: Defaulted<number>;
  error: string | null;
  fence: FenceColumn;
  updated_at: Millis;
}

/** The `import_failures` table. */
export interface ImportFailuresTable {
  import_id: number;
  type: string;
  key: string;
  run: number;
  error: string;
  at: Millis;
}

/** The `import_users` table: who appears in an import. */
export interface ImportUsersTable {
  import_id: number;
  login_key: string;
  login: string;
  run: number;
}

/** The `github_users` table: the shared profile cache. */
export interface GithubUsersTable {
  api_host: string;
  login_key: string;
  state: 'found' | 'missing';
  data: string | null;
  etag: string | null;
  fetched_at: Millis;
  expires_at: Millis;
}

/** An attachment's download state. */
export type AttachmentState = 'pending' | 'done' | 'failed' | 'refused';

/** The `import_attachments` table. */
export interface ImportAttachmentsTable {
  import_id: number;
  url_key: string;
  url: string;
  kind: 'attachment' | 'release_asset';
  state: AttachmentState;
  sha256: string | null;
  size: number | null;
  content_type: string | null;
  filename: string | null;
  error: string | null;
  run: number;
  updated_at: Millis;
  /** Where the bytes are asked for when not `url`: a release asset's API endpoint (migration 015); null: `url`. */
  fetch_url: Defaulted<string | null>;
}

/** The `import_progress` table: what each committed batch of an import added to its progress (migration 016; see importer/store/progress.ts). */
export interface ImportProgressTable extends RequestCounterColumns {
  id: Generated<number>;
  import_id: number;
  at: Millis;
  /** JSON array of the coordinator's rate budgets when it wrote the row; null for a job's row. */
  rate: string | null;
  /** Secondary-limit answers the batch got (migration 022; only progress rows count them). */
  secondary_limited: Count;
}

/** The importer's tables, part of the registry store's schema. */
/** Objects webhooks named, waiting to be fetched again (migration 023). */
export interface ImportRefreshesTable {
  import_id: number;
  target: string;
  seq: number;
  detail: string;
  requested_at: number;
  last_at: number;
}

export interface ImportSchema {
  imports: ImportsTable;
  import_objects: ImportObjectsTable;
  import_cursors: ImportCursorsTable;
  import_jobs: ImportJobsTable;
  import_failures: ImportFailuresTable;
  import_users: ImportUsersTable;
  github_users: GithubUsersTable;
  import_attachments: ImportAttachmentsTable;
  import_progress: ImportProgressTable;
  import_refreshes: ImportRefreshesTable;
}
