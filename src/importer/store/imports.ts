import { sql, type Compilable, type Kysely } from 'kysely';
import type { Database } from '../../store/database.js';
import { fenceGuard, prepared, type PreparedQuery } from '../../store/sql.js';
import type { Schema } from '../../store/types.js';
import type { ImportMode, ImportState } from '../../store/import-tables.js';
import { ImportNameTakenError, ImportNotFoundError, ImportStateError } from '../errors.js';
import type { RequestCounts } from '../github/client.js';
import type { RateBudget } from '../github/pacer.js';
import { STAGES, type Stage } from '../types.js';

export type { ImportMode, ImportState };

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
}

export interface NewImport {
  name: string;
  owner: string;
  repo: string;
  apiUrl: string;
  credentials: string[];
  concurrency: number;
  intervalMs: number | null;
}

type ImportRow = Schema['imports'] extends infer T ? { [K in keyof T]: unknown } : never;

function toRecord(row: ImportRow): ImportRecord {
  const n = (value: unknown) => (value === null || value === undefined ? null : Number(value));
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
    progressAt: n(row.progress_at),
    lastSyncedAt: n(row.last_synced_at),
    failure: (row.failure as string | null) ?? null,
    repositorySource: (row.repository_source as string | null) ?? null,
    wikiSource: (row.wiki_source as string | null) ?? null,
    requests: {
      total: Number(row.requests_total),
      counted: Number(row.requests_counted),
      notModified: Number(row.requests_not_modified),
      retried: Number(row.requests_retried),
      rateLimitWaits: Number(row.rate_limit_waits),
      rateLimitWaitMs: Number(row.rate_limit_wait_ms),
    },
    rate: JSON.parse(String(row.rate)) as RateBudget[],
    fence: row.fence === null || row.fence === undefined ? null : BigInt(String(row.fence)),
    unfinishedRuns: Number(row.unfinished_runs ?? 0),
  };
}

/** What a coordinator's guarded write adds to the row besides taking the fence: request counters, the rate budgets. */
export interface Progress {
  counts: RequestCounts;
  rate: RateBudget[];
}

/**
 * The `imports` table. Writes on behalf of the import's coordinator carry
 * its lease fence and apply only while the row's stored fence is not above
 * it and the run is the one the coordinator runs (see {@link guardStep}).
 * Requests from the CLI or the API (sync, resume, cancel) are plain writes
 * the coordinator sees on its next guarded write.
 */
export class ImportRepository {
  readonly #db: Kysely<Schema>;

  /**
   * The guards every page and every job writes behind, compiled once (see
   * PreparedQuery). Inputs: now, the request counters to add, the rate
   * budgets (coordinator only), the fence (coordinator only), the import id
   * and run. Stores progress, counters and the fence. Returns the id when
   * the import runs that run (and, for the coordinator, its fence is not above).
   */
  readonly #guard: PreparedQuery<[now: number, ...counts: number[], rate: string, fence: bigint, id: number, run: number], { id: number }>;
  readonly #jobGuard: PreparedQuery<[now: number, ...counts: number[], id: number, run: number], { id: number }>;

  constructor(database: Pick<Database, 'db'>) {
    const db = (this.#db = database.db);
    const counters = (arg: (index: number) => unknown) => ({
      requests_total: sql<number>`requests_total + ${arg(1)}`,
      requests_counted: sql<number>`requests_counted + ${arg(2)}`,
      requests_not_modified: sql<number>`requests_not_modified + ${arg(3)}`,
      requests_retried: sql<number>`requests_retried + ${arg(4)}`,
      rate_limit_waits: sql<number>`rate_limit_waits + ${arg(5)}`,
      rate_limit_wait_ms: sql<number>`rate_limit_wait_ms + ${arg(6)}`,
    });
    this.#guard = prepared(db, (arg) =>
      db
        .updateTable('imports')
        .set({ fence: arg(8) as bigint, progress_at: arg(0) as number, updated_at: arg(0) as number, rate: arg(7) as string, ...counters(arg as (index: number) => unknown) })
        .where('id', '=', arg(9) as number)
        .where('run', '=', arg(10) as number)
        .where('state', '=', 'started')
        .where(sql<boolean>`(fence is null or fence <= ${arg(8)})`)
        .returning('id'),
    );
    this.#jobGuard = prepared(db, (arg) =>
      db
        .updateTable('imports')
        .set({ progress_at: arg(0) as number, updated_at: arg(0) as number, ...counters(arg as (index: number) => unknown) })
        .where('id', '=', arg(7) as number)
        .where('run', '=', arg(8) as number)
        .where('state', '=', 'started')
        .returning('id'),
    );
  }

  #select() {
    return this.#db.selectFrom('imports').selectAll().select(sql<string | null>`cast(fence as text)`.as('fence'));
  }

  /** @throws ImportNameTakenError when another project has the name. */
  async create(input: NewImport, now = Date.now()): Promise<ImportRecord> {
    const existing = await this.find(input.name);
    if (existing) throw new ImportNameTakenError(input.name, `${existing.owner}/${existing.repo} from ${existing.apiUrl}`);
    try {
      // Inputs: the validated import. Stores a pending row at the first stage, run 1, one request recorded.
      await this.#db
        .insertInto('imports')
        .values({
          name: input.name,
          owner: input.owner,
          repo: input.repo,
          api_url: input.apiUrl,
          credentials: JSON.stringify(input.credentials),
          concurrency: input.concurrency,
          state: 'pending',
          stage: STAGES[0],
          mode: 'full',
          run: 1,
          requested_seq: 1,
          interval_ms: input.intervalMs,
          created_at: now,
          updated_at: now,
        })
        .execute();
    } catch (error) {
      const raced = await this.find(input.name);
      if (raced) throw new ImportNameTakenError(input.name, `${raced.owner}/${raced.repo} from ${raced.apiUrl}`);
      throw error;
    }
    return this.get(input.name);
  }

  async find(name: string): Promise<ImportRecord | undefined> {
    const row = await this.#select().where(sql<boolean>`lower(name) = lower(${name})`).executeTakeFirst();
    return row ? toRecord(row as ImportRow) : undefined;
  }

  /** @throws ImportNotFoundError */
  async get(name: string): Promise<ImportRecord> {
    const found = await this.find(name);
    if (!found) throw new ImportNotFoundError(name);
    return found;
  }

  async getById(id: number): Promise<ImportRecord | undefined> {
    const row = await this.#select().where('id', '=', id).executeTakeFirst();
    return row ? toRecord(row as ImportRow) : undefined;
  }

  async list(): Promise<ImportRecord[]> {
    const rows = await this.#select().orderBy('name').execute();
    return rows.map((row) => toRecord(row as ImportRow));
  }

  /**
   * Imports the scheduler looks at: started and pending ones (a coordinator
   * may have died, a nudge may have been lost), and those due a sync:
   * synced ones, and syncs that failed (the schedule goes on; a failed
   * first import waits for `import resume`).
   */
  async dueOrRunning(now: number): Promise<ImportRecord[]> {
    const rows = await this.#select()
      .where((eb) =>
        eb.or([
          eb('state', 'in', ['started', 'pending']),
          eb.and([eb('next_sync_at', '<=', now), eb.or([eb('state', '=', 'synced'), eb.and([eb('state', '=', 'failed'), eb('mode', '=', 'sync')])])]),
        ]),
      )
      .execute();
    return rows.map((row) => toRecord(row as ImportRow));
  }

  /**
   * Records a sync request: a finished import gets a new run (mode `sync`,
   * from the first stage, keeping each collection's watermark); a running
   * one serves it with another run when the current one ends.
   * @throws ImportStateError when the import never finished (resume it instead).
   */
  async requestSync(name: string, now = Date.now()): Promise<ImportRecord> {
    const current = await this.get(name);
    if (current.state === 'synced' || (current.mode === 'sync' && (current.state === 'failed' || current.state === 'cancelled'))) {
      // Inputs: the import id and the state read. Stores a new pending run unless something changed the row meanwhile.
      await this.#db
        .updateTable('imports')
        .set({
          state: 'pending',
          mode: 'sync',
          stage: STAGES[0],
          run: sql<number>`run + 1`,
          requested_seq: sql<number>`requested_seq + 1`,
          failure: null,
          finished_at: null,
          progress_at: now,
          unfinished_runs: 0,
          updated_at: now,
        })
        .where('id', '=', current.id)
        .where('state', '=', current.state)
        .execute();
    } else if (current.state === 'started' || current.state === 'pending') {
      await this.#db
        .updateTable('imports')
        .set({ requested_seq: sql<number>`requested_seq + 1`, updated_at: now })
        .where('id', '=', current.id)
        .execute();
    } else {
      throw new ImportStateError(name, current.state, 'it never finished; continue it with forgesync import resume');
    }
    return this.get(name);
  }

  /**
   * Makes a failed or cancelled import pending again, at the stage and
   * cursors where it stopped. An operator's resume also starts the count of
   * runs that did not finish afresh (a started import killed again and
   * again is not parked while someone keeps resuming it).
   * @throws ImportStateError for a synced import (sync it instead).
   */
  async resume(name: string, now = Date.now()): Promise<ImportRecord> {
    const current = await this.get(name);
    if (current.state === 'synced') throw new ImportStateError(name, current.state, 'nothing to resume; bring it up to date with forgesync import sync');
    if (current.state === 'failed' || current.state === 'cancelled') {
      await this.#db
        .updateTable('imports')
        .set({ state: 'pending', failure: null, finished_at: null, progress_at: now, unfinished_runs: 0, updated_at: now })
        .where('id', '=', current.id)
        .where('state', '=', current.state)
        .execute();
    } else {
      await this.#db.updateTable('imports').set({ unfinished_runs: 0, updated_at: now }).where('id', '=', current.id).where('state', 'in', ['pending', 'started']).execute();
    }
    return this.get(name);
  }

  /** Cancels the import: its coordinator and jobs stop at their next write; resume continues it. */
  async cancel(name: string, now = Date.now()): Promise<ImportRecord> {
    const current = await this.get(name);
    await this.#db
      .updateTable('imports')
      .set({ state: 'cancelled', finished_at: now, next_sync_at: null, updated_at: now })
      .where('id', '=', current.id)
      .execute();
    return this.get(name);
  }

  /**
   * The guard of every coordinator write, the first step of its batch:
   * applies only while the import runs run `run` and the row's fence is not
   * above `fence`; takes the fence, notes progress, adds request counters.
   * Returns the id when it applied (no row: refused, and the batch must roll back).
   */
  guardStep(id: number, run: number, fence: bigint, now: number, progress: Required<Progress>): Compilable {
    return this.#guard.bind(now, ...countValues(progress.counts), JSON.stringify(progress.rate), fence, id, run);
  }

  /**
   * The guard of a per-object job's write: the import must still be running
   * run `run` (a cancel or a new run stops it); the job's own lease fence is
   * checked on its import_jobs row. Adds the job's request counters.
   */
  jobGuardStep(id: number, run: number, now: number, counts: RequestCounts): Compilable {
    return this.#jobGuard.bind(now, ...countValues(counts), id, run);
  }

  /**
   * Takes the import for a coordinator holding its lease (fence `fence`):
   * a pending import becomes started, and the run begun is counted in
   * `unfinishedRuns` until it ends. Returns the row as taken, or null when
   * there is nothing to run (synced, failed, cancelled) or a newer fence wrote it.
   */
  async claim(id: number, fence: bigint, now = Date.now()): Promise<ImportRecord | null> {
    // Inputs: id, fence, now. Stores state started, the fence, the start time of the run's first claim, one more run begun.
    const rows = await this.#db
      .updateTable('imports')
      .set({
        state: 'started',
        fence,
        started_at: sql<number>`case when state = 'pending' then cast(${now} as bigint) else coalesce(started_at, cast(${now} as bigint)) end`,
        progress_at: now,
        unfinished_runs: sql<number>`unfinished_runs + 1`,
        updated_at: now,
      })
      .where('id', '=', id)
      .where('state', 'in', ['pending', 'started'])
      .where(fenceGuard(fence))
      .returning('id')
      .execute();
    return rows.length > 0 ? ((await this.getById(id)) ?? null) : null;
  }

  /** The stored fence (to tell a stale lease from a lease store that lost its counters). */
  async storedFence(id: number): Promise<bigint | null> {
    return (await this.getById(id))?.fence ?? null;
  }

  /** Moves a running import to `stage` (a step after the guard). */
  setStageStep(id: number, stage: Stage, now: number): Compilable {
    return this.#db.updateTable('imports').set({ stage, progress_at: now, updated_at: now }).where('id', '=', id);
  }

  /** Records the git sources the import keeps (fenced, after the guard). */
  setSourcesStep(id: number, repositorySource: string | null, wikiSource: string | null): Compilable {
    return this.#db.updateTable('imports').set({ repository_source: repositorySource, wiki_source: wikiSource }).where('id', '=', id).returning('id');
  }

  /**
   * Ends a run that went through every stage: synced (served up to
   * `targetSeq`, next sync scheduled), or, when a sync was requested during
   * the run, straight into a new sync run (a step after the guard).
   */
  finishStep(id: number, targetSeq: number, now: number): Compilable {
    return this.#db
      .updateTable('imports')
      .set({
        state: sql<ImportState>`case when requested_seq > ${targetSeq} then 'started' else 'synced' end`,
        mode: sql<ImportMode>`case when requested_seq > ${targetSeq} then 'sync' else mode end`,
        stage: sql<string>`case when requested_seq > ${targetSeq} then cast(${STAGES[0]} as text) else 'finish' end`,
        run: sql<number>`case when requested_seq > ${targetSeq} then run + 1 else run end`,
        completed_seq: targetSeq,
        finished_at: sql<number | null>`case when requested_seq > ${targetSeq} then null else cast(${now} as bigint) end`,
        last_synced_at: now,
        next_sync_at: sql<number | null>`case when interval_ms is null then null else cast(${now} as bigint) + interval_ms end`,
        unfinished_runs: 0,
        updated_at: now,
      })
      .where('id', '=', id);
  }

  /** Marks the run failed with `reason` (fenced); the stage and cursors stay for a resume. */
  async fail(id: number, run: number, fence: bigint, reason: string, now = Date.now()): Promise<boolean> {
    const rows = await this.#db
      .updateTable('imports')
      .set({
        state: 'failed',
        failure: reason.slice(0, 2000),
        finished_at: now,
        next_sync_at: sql<number | null>`case when interval_ms is null then null else cast(${now} as bigint) + interval_ms end`,
        unfinished_runs: 0,
        updated_at: now,
      })
      .where('id', '=', id)
      .where('run', '=', run)
      .where('state', '=', 'started')
      .where(fenceGuard(fence))
      .returning('id')
      .execute();
    return rows.length > 0;
  }

  /**
   * Parks a crash-looping import (fenced): failed with `reason`, off the
   * sync schedule (the scheduler would start it again), the stage and
   * cursors kept for a resume. Returns whether it applied.
   */
  async park(id: number, run: number, fence: bigint, reason: string, now = Date.now()): Promise<boolean> {
    const rows = await this.#db
      .updateTable('imports')
      .set({ state: 'failed', failure: reason.slice(0, 2000), finished_at: now, next_sync_at: null, updated_at: now })
      .where('id', '=', id)
      .where('run', '=', run)
      .where('state', '=', 'started')
      .where(fenceGuard(fence))
      .returning('id')
      .execute();
    return rows.length > 0;
  }

  /** A run stopped on purpose (shutdown, lease lost) ended rather than died: it no longer counts as unfinished (fenced). */
  async stopped(id: number, run: number, fence: bigint, now = Date.now()): Promise<void> {
    await this.#db
      .updateTable('imports')
      .set({ unfinished_runs: sql<number>`case when unfinished_runs > 0 then unfinished_runs - 1 else 0 end`, updated_at: now })
      .where('id', '=', id)
      .where('run', '=', run)
      .where('state', '=', 'started')
      .where(fenceGuard(fence))
      .execute();
  }
}

/** The counters in the order the guards add them. */
function countValues(counts: RequestCounts): number[] {
  return [counts.total, counts.counted, counts.notModified, counts.retried, counts.rateLimitWaits, counts.rateLimitWaitMs];
}
