import { sql, type Compilable, type Kysely } from 'kysely';
import type { Database } from '../../store/database.js';
import { fenceGuard } from '../../store/sql.js';
import type { Schema } from '../../store/types.js';
import type { ImportMode, ImportState } from '../../store/import-tables.js';
import { ImportNameTakenError, ImportNotFoundError, ImportStateError } from '../errors.js';
import type { RequestCounts } from '../github/request-counts.js';
import type { RateBudget } from '../github/pacer.js';
import { STAGES, type Stage } from '../types.js';
import { ImportGuards, type CoordinatorGuard } from './import-guards.js';
import { toRecord, type ImportRecord, type ImportRow, type NewImport } from './import-record.js';
import { ImportProgress } from './progress.js';

export type { ImportMode, ImportRecord, ImportState, NewImport };

/**
 * The `imports` table. Writes on behalf of the import's coordinator carry
 * its lease fence and apply only while the row's stored fence is not above
 * it and the run is the one the coordinator runs (see {@link guardStep}).
 * Requests from the CLI or the API (sync, resume, cancel) are plain writes
 * the coordinator sees on its next guarded write.
 *
 * No batch updates the row merely to pass its guard: the pages and jobs of
 * an import write side by side. A guard compares, holding the row in share
 * mode until its transaction ends (PostgreSQL's FOR SHARE; SQLite runs one
 * write transaction at a time anyway): any number of batches hold it
 * together, while a write that changes what guards compare (a newer holder
 * taking the fence, a cancel, a new run) waits for the batches in flight and
 * every later batch sees it. So a stale holder's batch either commits before
 * the newer holder's fence is stored or is refused: fencing stays exact.
 * What batches add to the import's progress goes to rows of their own
 * (progress.ts), which readers add to the row's.
 */
export class ImportRepository {
  readonly #db: Kysely<Schema>;
  readonly #progress: ImportProgress;
  readonly #guards: ImportGuards;
  /** The steps of this repository that update the import's row (see {@link updatesImportRow}). */
  readonly #rowUpdates = new WeakSet<Compilable>();

  constructor(database: Pick<Database, 'db'>) {
    this.#db = database.db;
    this.#progress = new ImportProgress(this.#db);
    this.#guards = new ImportGuards(this.#db);
  }

  #select() {
    return this.#db.selectFrom('imports').selectAll().select(sql<string | null>`cast(fence as text)`.as('fence'));
  }

  /** The records of `rows`, with what their progress rows add. */
  async #records(rows: readonly unknown[]): Promise<ImportRecord[]> {
    const typed = rows as ImportRow[];
    const sums = await this.#progress.sums(typed.map((row) => Number(row.id)));
    return typed.map((row) => toRecord(row, sums.get(Number(row.id))));
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
    return row ? (await this.#records([row]))[0] : undefined;
  }

  /** @throws ImportNotFoundError */
  async get(name: string): Promise<ImportRecord> {
    const found = await this.find(name);
    if (!found) throw new ImportNotFoundError(name);
    return found;
  }

  async findById(id: number): Promise<ImportRecord | undefined> {
    const row = await this.#select().where('id', '=', id).executeTakeFirst();
    return row ? (await this.#records([row]))[0] : undefined;
  }

  /** The import's state alone (undefined: no such import): one row read, none of its progress added up as findById does. */
  async stateOf(id: number): Promise<ImportState | undefined> {
    const row = await this.#db.selectFrom('imports').select('state').where('id', '=', id).executeTakeFirst();
    return row?.state;
  }

  async list(): Promise<ImportRecord[]> {
    return this.#records(await this.#select().orderBy('name').execute());
  }

  /**
   * Imports the scheduler looks at: started and pending ones (a coordinator
   * may have died, a nudge may have been lost), failed ones due a retry
   * (the failure was transient), and those due a sync: synced ones, and
   * syncs that failed (the schedule goes on; a first import failed for a
   * permanent cause waits for `import resume`).
   */
  async dueOrRunning(now: number): Promise<ImportRecord[]> {
    const rows = await this.#select()
      .where((eb) =>
        eb.or([
          eb('state', 'in', ['started', 'pending']),
          eb.and([eb('state', '=', 'failed'), eb('retry_at', '<=', now)]),
          eb.and([eb('next_sync_at', '<=', now), eb.or([eb('state', '=', 'synced'), eb.and([eb('state', '=', 'failed'), eb('mode', '=', 'sync')])])]),
        ]),
      )
      .execute();
    return this.#records(rows);
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
          retry_at: null,
          transient_failures: 0,
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
   * again is not parked while someone keeps resuming it), and that of runs
   * failed for a transient cause.
   * @throws ImportStateError for a synced import (sync it instead).
   */
  async resume(name: string, now = Date.now()): Promise<ImportRecord> {
    const current = await this.get(name);
    if (current.state === 'synced') throw new ImportStateError(name, current.state, 'nothing to resume; bring it up to date with forgesync import sync');
    if (current.state === 'failed' || current.state === 'cancelled') {
      await this.#db
        .updateTable('imports')
        .set({ state: 'pending', failure: null, finished_at: null, progress_at: now, unfinished_runs: 0, retry_at: null, transient_failures: 0, updated_at: now })
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
      .set({ state: 'cancelled', finished_at: now, next_sync_at: null, retry_at: null, updated_at: now })
      .where('id', '=', current.id)
      .execute();
    return this.get(name);
  }

  /** The guard of a coordinator's batch (see ImportGuards.coordinator). */
  guardStep(guard: CoordinatorGuard): Compilable {
    return this.#guards.coordinator(guard);
  }

  /** The guard of a refresh's write between runs (see ImportGuards.refresh). */
  refreshGuardStep(id: number, fence: bigint): Compilable {
    return this.#guards.refresh(id, fence);
  }

  /** The guard of a per-object job's write (see ImportGuards.job). */
  jobGuardStep(id: number, run: number): Compilable {
    return this.#guards.job(id, run);
  }

  /**
   * The progress a batch records, a step after its guards: the requests
   * made since the last batch (`counts`), now, and the coordinator's rate
   * budgets (null from a job). An appended row of its own (see progress.ts).
   */
  progressStep(id: number, now: number, counts: RequestCounts, rate: RateBudget[] | null): Compilable {
    return this.#progress.step(id, now, counts, rate);
  }

  /** Folds the import's progress rows into one (the coordinator, now and then: reads stay cheap). */
  compactProgress(id: number): Promise<void> {
    return this.#progress.compact(id);
  }

  /** Whether `step` is one of this repository's steps that update the import's row (its batch then takes the row: see guardStep). */
  updatesImportRow(step: Compilable): boolean {
    return this.#rowUpdates.has(step);
  }

  /** Remembers `step` as one that updates the import's row. */
  #updatesRow<T extends Compilable>(step: T): T {
    this.#rowUpdates.add(step);
    return step;
  }

  /**
   * Takes the import for a coordinator holding its lease (fence `fence`):
   * a pending import becomes started, and the run begun is counted in
   * `unfinishedRuns` until it ends. Runs that died count only while nothing
   * was committed since the last claim: an import that went on between
   * crashes (a worker killed, another paused past its lease, in distributed
   * mode) is not a crash loop, so the count starts again at this run.
   * Returns the row as taken, or null when
   * there is nothing to run (synced, failed, cancelled) or a newer fence wrote it.
   */
  async claim(id: number, fence: bigint, now = Date.now()): Promise<ImportRecord | null> {
    // Inputs: id, fence, now. Stores state started, the fence, the start time of the run's first claim, one more run begun
    // (or this run alone when a batch committed since the last claim: a progress row newer than the progress_at that claim set).
    const rows = await this.#db
      .updateTable('imports')
      .set({
        state: 'started',
        fence,
        started_at: sql<number>`case when state = 'pending' then cast(${now} as bigint) else coalesce(started_at, cast(${now} as bigint)) end`,
        progress_at: now,
        unfinished_runs: sql<number>`case when exists (select 1 from import_progress where import_progress.import_id = imports.id and import_progress.at > imports.progress_at) then 1 else unfinished_runs + 1 end`,
        updated_at: now,
      })
      .where('id', '=', id)
      .where('state', 'in', ['pending', 'started'])
      .where(fenceGuard(fence))
      .returning('id')
      .execute();
    return rows.length > 0 ? ((await this.findById(id)) ?? null) : null;
  }

  /** The stored fence (to tell a stale lease from a lease store that lost its counters). */
  async storedFence(id: number): Promise<bigint | null> {
    // The fence alone: no need to add up the import's progress rows as a whole record would.
    const row = await this.#db.selectFrom('imports').select(sql<string | null>`cast(fence as text)`.as('fence')).where('id', '=', id).executeTakeFirst();
    return row?.fence === null || row?.fence === undefined ? null : BigInt(row.fence);
  }

  /** Moves a running import to `stage` (a step after the guard). */
  setStageStep(id: number, stage: Stage, now: number): Compilable {
    return this.#updatesRow(this.#db.updateTable('imports').set({ stage, progress_at: now, updated_at: now }).where('id', '=', id));
  }

  /** Records the git sources the import keeps (fenced, after the guard). */
  setSourcesStep(id: number, repositorySource: string | null, wikiSource: string | null): Compilable {
    return this.#updatesRow(this.#db.updateTable('imports').set({ repository_source: repositorySource, wiki_source: wikiSource }).where('id', '=', id).returning('id'));
  }

  /** Records where the repository is now, GitHub having answered its id with another owner or name (fenced, after the guard); the import's name stays. */
  setRepositoryNameStep(id: number, owner: string, repo: string, now: number): Compilable {
    return this.#updatesRow(this.#db.updateTable('imports').set({ owner, repo, updated_at: now }).where('id', '=', id));
  }

  /**
   * Ends a run that went through every stage: synced (served up to
   * `targetSeq`, next sync scheduled), or, when a sync was requested during
   * the run, straight into a new sync run (a step after the guard).
   */
  finishStep(id: number, targetSeq: number, now: number): Compilable {
    return this.#updatesRow(
      this.#db
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
          retry_at: null,
          transient_failures: 0,
          updated_at: now,
        })
        .where('id', '=', id),
    );
  }

  /**
   * Marks the run failed with `reason` (fenced); the stage and cursors stay
   * for a resume. `retry`: `on-interval` puts it back on its sync schedule
   * (a failure that the next sync may not meet); `never` takes it off
   * (a crash-looping import, parked until someone resumes it: the
   * scheduler would only start it to die again); `{ at }` (a transient
   * failure) also has the scheduler resume it where it stopped at `at`,
   * counting it among the transient failures in a row. Returns whether it applied.
   */
  async fail(id: number, run: number, fence: bigint, failure: { reason: string; retry: 'on-interval' | 'never' | { at: number } }, now = Date.now()): Promise<boolean> {
    const transient = typeof failure.retry === 'object' ? failure.retry : null;
    // Inputs: the run and fence failing, the reason, when to retry. Stores the failure and the schedule; returns the id when it applied.
    const rows = await this.#db
      .updateTable('imports')
      .set({
        state: 'failed',
        failure: failure.reason.slice(0, 2000),
        finished_at: now,
        next_sync_at: failure.retry === 'never' ? null : sql<number | null>`case when interval_ms is null then null else cast(${now} as bigint) + interval_ms end`,
        unfinished_runs: 0,
        retry_at: transient?.at ?? null,
        transient_failures: transient ? sql<number>`transient_failures + 1` : 0,
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
   * The scheduler's resume of an import failed for a transient cause whose
   * retry time has come: pending again where it stopped, like `resume`,
   * but keeping the count of transient failures in a row (the next pause
   * grows). Returns whether it applied (not when someone acted meanwhile).
   */
  async retry(id: number, now = Date.now()): Promise<boolean> {
    // Inputs: the import id, now. Stores a pending run unless it is no longer failed with its retry due.
    const rows = await this.#db
      .updateTable('imports')
      .set({ state: 'pending', failure: null, finished_at: null, progress_at: now, unfinished_runs: 0, retry_at: null, updated_at: now })
      .where('id', '=', id)
      .where('state', '=', 'failed')
      .where('retry_at', '<=', now)
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
