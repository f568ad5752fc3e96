import type { Kysely } from 'kysely';
import { refreshBacklog } from './store/refreshes.js';
import type { Schema } from '../store/types.js';
import type { ServerPaths } from '../util/server-paths.js';
import { countFailures, listFailures, type ImportFailure } from './store/failures.js';
import type { ImportRecord } from './store/imports.js';
import { countObjects } from './store/objects.js';
import { countUsers } from './store/users.js';
import { emptyCounts, OBJECT_TYPES, type TypeCounts } from './types.js';

/** Per type, what was fetched (imported, plus what failed) and what was imported. */
export interface ImportCounts {
  fetched: TypeCounts;
  imported: TypeCounts;
}

/** The counts of an import (all runs), or of one run's writes (a sync's final log line). */
export async function importCounts(db: Kysely<Schema>, record: Pick<ImportRecord, 'id' | 'apiUrl'>, run?: number): Promise<ImportCounts> {
  const [objects, failures] = await Promise.all([countObjects(db, record.id, run), countFailures(db, record.id)]);
  const imported = emptyCounts();
  const fetched = emptyCounts();
  for (const type of OBJECT_TYPES) imported[type] = objects.get(type) ?? 0;
  imported.user = run === undefined ? (await countUsers(db, record.id, record.apiUrl)).found : 0;
  for (const type of OBJECT_TYPES) fetched[type] = imported[type] + (run === undefined ? (failures.get(type) ?? 0) : 0);
  return { fetched, imported };
}

/** A git source of an import as the status shows it. */
export interface SourceStatus {
  name: string;
  state: ImportRecord['state'];
  lastSyncedAt: string | null;
}

/** The JSON of `forgesync import status --json` and `GET /api/imports/<name>` (a contract for other tools). */
export interface ImportStatusJson {
  name: string;
  owner: string;
  repo: string;
  apiUrl: string;
  state: ImportRecord['state'];
  stage: string;
  counts: ImportCounts;
  requests: { total: number; counted: number; notModified: number; retried: number; rateLimitWaits: number; secondaryLimited: number };
  startedAt: string | null;
  finishedAt: string | null;
  durationS: number | null;
  failures: ImportFailure[];
  sources: { repository: SourceStatus | null; wiki: SourceStatus | null };
  mode: string;
  run: number;
  failure: string | null;
  rate: ImportRecord['rate'];
  rateLimitWaitS: number;
  nextSyncAt: string | null;
  /** When the scheduler resumes the import, failed for a transient cause; null when nothing resumes it but an operator (or its next sync). */
  retryAt: string | null;
  credentials: string[];
  concurrency: number;
  /** Objects webhooks named that wait to be fetched again, and how long the oldest has waited. */
  refreshes: { waiting: number; oldestWaitingS: number | null };
}

const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());

export async function importStatus(
  db: Kysely<Schema>,
  record: ImportRecord,
  sourceOf: (name: string) => Promise<SourceStatus | null>,
): Promise<ImportStatusJson> {
  const [counts, failures, repository, wiki, backlog] = await Promise.all([
    importCounts(db, record),
    listFailures(db, record.id),
    record.repositorySource ? sourceOf(record.repositorySource) : null,
    record.wikiSource ? sourceOf(record.wikiSource) : null,
    refreshBacklog(db, record.id),
  ]);
  const end = record.finishedAt ?? (record.state === 'started' ? Date.now() : null);
  return {
    name: record.name,
    owner: record.owner,
    repo: record.repo,
    apiUrl: record.apiUrl,
    state: record.state,
    stage: record.stage,
    counts,
    requests: {
      total: record.requests.total,
      counted: record.requests.counted,
      notModified: record.requests.notModified,
      retried: record.requests.retried,
      rateLimitWaits: record.requests.rateLimitWaits,
      secondaryLimited: record.requests.secondaryLimited,
    },
    startedAt: iso(record.startedAt),
    finishedAt: iso(record.finishedAt),
    durationS: record.startedAt !== null && end !== null ? Math.round((end - record.startedAt) / 100) / 10 : null,
    failures,
    sources: { repository, wiki },
    mode: record.mode,
    run: record.run,
    failure: record.failure,
    rate: record.rate,
    rateLimitWaitS: Math.round(record.requests.rateLimitWaitMs / 100) / 10,
    nextSyncAt: iso(record.nextSyncAt),
    retryAt: iso(record.retryAt),
    credentials: record.credentials,
    concurrency: record.concurrency,
    refreshes: { waiting: backlog.waiting, oldestWaitingS: backlog.oldestAt === null ? null : Math.max(0, Math.round((Date.now() - backlog.oldestAt) / 100) / 10) },
  };
}

/**
 * The status as the HTTP API answers it: the CLI's JSON with the server's
 * directories hidden in its failure texts (`<dataDir>/…`): callers of the
 * API have no business with where files lie on the server.
 */
export function importStatusAnswer(status: ImportStatusJson, paths: ServerPaths): ImportStatusJson {
  return {
    ...status,
    failure: paths.hide(status.failure),
    failures: status.failures.map((failure) => ({ ...failure, error: paths.hide(failure.error) })),
  };
}
