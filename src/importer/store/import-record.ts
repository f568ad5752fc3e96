import type { ImportMode, ImportState } from '../../store/import-tables.js';
import type { Schema } from '../../store/types.js';
import type { RequestCounts } from '../github/request-counts.js';
import type { RateBudget } from '../github/pacer.js';
import type { Stage } from '../types.js';
import type { ProgressSum } from './progress.js';

/** An `imports` row as the importer uses it. */
export interface ImportRecord {
  id: number;
  name: string;
  owner: string;
  repo: string;
  apiUrl: string;
  credentials: string[];
  concurrency: number;
  state: ImportState;
  stage: Stage;
  mode: ImportMode;
  run: number;
  requestedSeq: number;
  completedSeq: number;
  intervalMs: number | null;
  nextSyncAt: number | null;
  createdAt: number;
  startedAt: number | null;
  finishedAt: number | null;
  progressAt: number | null;
  lastSyncedAt: number | null;
  failure: string | null;
  repositorySource: string | null;
  wikiSource: string | null;
  requests: RequestCounts;
  rate: RateBudget[];
  fence: bigint | null;
  /** Runs begun (claimed) since one last ended or an operator asked for the import again; the claim of the run in progress counts. */
  unfinishedRuns: number;
  /** When the scheduler resumes this import, failed for a transient cause; null: it waits for an operator (or its next sync). */
  retryAt: number | null;
  /** Runs in a row that failed for a transient cause (the pause before the next retry grows with them). */
  transientFailures: number;
}

/** What creating an import stores; the rest of its record starts from defaults. */
export type NewImport = Pick<ImportRecord, 'name' | 'owner' | 'repo' | 'apiUrl' | 'credentials' | 'concurrency' | 'intervalMs'>;

export type ImportRow = Schema['imports'] extends infer T ? { [K in keyof T]: unknown } : never;

/** The record of `row`, with what its progress rows add (see progress.ts): counters, the latest write, the latest rate budgets. */
export function toRecord(row: ImportRow, progress: ProgressSum | undefined): ImportRecord {
  const n = (value: unknown) => (value === null || value === undefined ? null : Number(value));
  const added = progress?.counts;
  return {
    id: Number(row.id),
    name: String(row.name),
    owner: String(row.owner),
    repo: String(row.repo),
    apiUrl: String(row.api_url),
    credentials: JSON.parse(String(row.credentials)) as string[],
    concurrency: Number(row.concurrency),
    state: row.state as ImportState,
    stage: row.stage as Stage,
    mode: row.mode as ImportMode,
    run: Number(row.run),
    requestedSeq: Number(row.requested_seq),
    completedSeq: Number(row.completed_seq),
    intervalMs: n(row.interval_ms),
    nextSyncAt: n(row.next_sync_at),
    createdAt: Number(row.created_at),
    startedAt: n(row.started_at),
    finishedAt: n(row.finished_at),
    progressAt: progress && progress.at > Number(row.progress_at ?? 0) ? progress.at : n(row.progress_at),
    lastSyncedAt: n(row.last_synced_at),
    failure: (row.failure as string | null) ?? null,
    repositorySource: (row.repository_source as string | null) ?? null,
    wikiSource: (row.wiki_source as string | null) ?? null,
    requests: {
      total: Number(row.requests_total) + (added?.total ?? 0),
      counted: Number(row.requests_counted) + (added?.counted ?? 0),
      notModified: Number(row.requests_not_modified) + (added?.notModified ?? 0),
      retried: Number(row.requests_retried) + (added?.retried ?? 0),
      rateLimitWaits: Number(row.rate_limit_waits) + (added?.rateLimitWaits ?? 0),
      rateLimitWaitMs: Number(row.rate_limit_wait_ms) + (added?.rateLimitWaitMs ?? 0),
      // Counted only in progress rows (migration 022).
      secondaryLimited: added?.secondaryLimited ?? 0,
    },
    rate: progress?.rate ?? (JSON.parse(String(row.rate)) as RateBudget[]),
    fence: row.fence === null || row.fence === undefined ? null : BigInt(String(row.fence)),
    unfinishedRuns: Number(row.unfinished_runs ?? 0),
    retryAt: n(row.retry_at),
    transientFailures: Number(row.transient_failures ?? 0),
  };
}
