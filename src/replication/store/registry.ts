import { InvalidInputError } from '../../errors.js';
import { sql, type Kysely, type UpdateObject } from 'kysely';
import { appendChanges, type ChangeInput } from '../../store/change-log.js';
import { guardedList, run, runBatch } from '../../store/batch.js';
import { claimDue, dueForVerification, registryCounts, syncLag, type RegistryCounts, type SyncLag } from './registry-queries.js';
import { attemptQueries, completeAttempt, insertAttempt, listAttempts, type AttemptOutcome, type AttemptQueries } from './attempts.js';
import type { Database } from '../../store/database.js';
import { SourceNotFoundError } from '../../store/errors.js';
import { toRegistryRow, truncateFailure } from './rows.js';
import { DEFAULT_SYNC_INTERVAL_MS, epochGuard, finishSyncedArgs, ms, registryStatements, type RegistryStatements, type RegistryTiming } from './registry-statements.js';
import { matchRequests, type MatchRequests, type MatchedRequest } from './match-requests.js';
import { fenceGuard, requestedChanges } from '../../store/sql.js';
import { REGISTRY_STATES, type RegistryRow, type RegistryState, type Schema, type SourceWithRegistry, type SyncAttempt, type SyncTrigger } from '../../store/types.js';

/** Which rows requestMany() records a request on. */
export type RequestManyFilter = { state?: RegistryState } | 'all' | 'failed';

export type { RegistryCounts, RegistryTiming, SyncLag };

/** A registry row's request counters as a write left them. */
export interface RequestCounters {
  requestedSeq: number;
  completedSeq: number;
}

/** What finishSynced() records. */
export interface SyncedOutcome {
  /** The requested_seq the sync served (the row's target_seq when it started). */
  targetSeq: number;
  checksum: string | null;
  verified: boolean;
  /** Left as it is when undefined. */
  mirrorPath?: string | null;
  now: Date;
  /** The placement epoch the sync read (the write is refused if the source moved since); undefined: not checked. */
  epoch?: number;
  /** The sync moved the source here: it is placed on this shard (epoch + 1) with the same write. */
  movedTo?: string;
}

/** What finishSync() records: the sync's outcome, and the attempt it ends. */
export interface SyncEnd extends SyncedOutcome {
  /** The attempt startSync() recorded. */
  attemptId: number;
  /** The attempt's outcome, given whether the guard let the registry write through. */
  attempt: (written: boolean) => AttemptOutcome;
  /** The changes the sync made, recorded only with the write that makes them. */
  changes?: readonly ChangeInput[];
}

/** What finishFailed() records. */
export interface FailedOutcome {
  /** Already redacted by the caller; truncated to MAX_FAILURE_LENGTH here. */
  error: string;
  /** When the row is due again; null: only on request. */
  nextRetryAt: Date | null;
  /** The upstream repository is gone. */
  missing: boolean;
  now: Date;
  /** The placement epoch the sync read (the write is refused if the source moved since); undefined: not checked. */
  epoch?: number;
  /** The changes the failure makes, recorded only with the write that makes them. */
  changes?: readonly ChangeInput[];
}

/** Which registry write a fence-guarded UPDATE is (see #fencedUpdateQuery). */
interface FencedWrite {
  sourceId: number;
  fence: bigint;
  nowMs: number;
  /** The placement epoch to check; undefined: not checked. */
  epoch?: number | undefined;
}

/** The counters finishSynced's RETURNING gave, or null when it wrote no row (the guard rejected it). */
function countersOf(rows: { requested_seq: number; completed_seq: number }[]): RequestCounters | null {
  const row = rows[0];
  return row ? { requestedSeq: Number(row.requested_seq), completedSeq: Number(row.completed_seq) } : null;
}

/**
 * The registry: one row per source, the durable truth about its replication.
 * Triggers only record requests here; syncs read and write it. Every write
 * made on behalf of a sync carries the lease fence and applies only when the
 * row's stored fence is NULL or not above it, so a holder that lost its lease
 * cannot overwrite the next holder's row; those methods say false (or null)
 * when the guard rejected the write.
 */
export class RegistryRepository {
  readonly #db: Kysely<Schema>;
  readonly #dialect: Database['dialect'];
  readonly #defaultIntervalMs: number;

  // The statements every sync runs, compiled once (see PreparedQuery); the rest are built per call.
  readonly #request: RegistryStatements['request'];
  readonly #start: RegistryStatements['start'];
  readonly #flip: RegistryStatements['flip'];
  readonly #finishSynced: RegistryStatements['finishSynced'];
  readonly #get: RegistryStatements['get'];
  readonly #pending: RegistryStatements['pending'];
  readonly #attempts: AttemptQueries;
  readonly #matchRequests: MatchRequests;

  constructor(database: Pick<Database, 'db' | 'dialect'>, timing: RegistryTiming = {}) {
    const db = (this.#db = database.db);
    this.#dialect = database.dialect;
    this.#defaultIntervalMs = timing.defaultIntervalMs ?? DEFAULT_SYNC_INTERVAL_MS;
    const statements = registryStatements(db, timing);
    this.#request = statements.request;
    this.#start = statements.start;
    this.#flip = statements.flip;
    this.#finishSynced = statements.finishSynced;
    this.#get = statements.get;
    this.#pending = statements.pending;
    this.#attempts = attemptQueries(db);
    this.#matchRequests = matchRequests(db, database.dialect);
  }

  /** The database the registry is in (`sqlite`, `postgres`). */
  get dialect(): Database['dialect'] {
    return this.#dialect;
  }

  /**
   * Records a request in one atomic statement: requested_seq + 1, and a
   * synced or failed row becomes pending with its backoff cleared (an
   * explicit request overrides backoff). `trigger` is for the caller's logs.
   * @returns the new requested_seq.
   * @throws SourceNotFoundError when the source has no registry row.
   */
  async request(sourceId: number, trigger: SyncTrigger, now: Date = new Date()): Promise<number> {
    void trigger;
    const row = (await this.#request.execute(now.getTime(), sourceId)).rows[0];
    if (!row) throw new SourceNotFoundError(sourceId);
    return Number(row.requested_seq);
  }

  /**
   * request() on every enabled source whose URL has one of the match `keys`
   * (store/match-key.ts), in one statement; returns those sources, by name.
   * For webhooks: a disabled or unknown repository records nothing.
   */
  requestByMatchKeys(keys: readonly string[], now: Date = new Date()): Promise<MatchedRequest[]> {
    return this.#matchRequests.requestByMatchKeySets([keys], now).then((sets) => sets[0]!);
  }

  /** requestByMatchKeys for several key sets in one statement; the sources matched, per set (see match-requests.ts). */
  requestByMatchKeySets(keySets: readonly (readonly string[])[], now: Date = new Date()): Promise<MatchedRequest[][]> {
    return this.#matchRequests.requestByMatchKeySets(keySets, now);
  }

  /** request() on every row `filter` selects, in one statement; returns how many rows it touched. */
  async requestMany(filter: RequestManyFilter, now: Date = new Date()): Promise<number> {
    const state = filter === 'all' ? undefined : filter === 'failed' ? 'failed' : filter.state;
    if (state !== undefined && !REGISTRY_STATES.includes(state)) {
      throw new InvalidInputError(`unknown registry state "${state}"; expected one of ${REGISTRY_STATES.join(', ')}`);
    }
    let query = this.#db.updateTable('registry').set(requestedChanges(now.getTime()));
    if (state) query = query.where('state', '=', state);
    const result = await query.executeTakeFirst();
    return Number(result.numUpdatedRows);
  }

  /** Guarded: marks the row started, serving the current requested_seq. Null when the guard rejected it. */
  async start(sourceId: number, fence: bigint, now: Date): Promise<RegistryRow | null> {
    const row = (await this.#start.execute(now.getTime(), fence, sourceId, null)).rows[0];
    return row ? toRegistryRow(row) : null;
  }

  /**
   * Guarded: records a successful sync that served `targetSeq`. The row is
   * synced unless a request arrived meanwhile or the checksum did not verify
   * (then it is pending, to be synced again).
   */
  async finishSynced(sourceId: number, fence: bigint, outcome: SyncedOutcome): Promise<boolean> {
    const { query, args } = this.#finishSyncedQuery(sourceId, fence, outcome);
    return (await query.execute(...args)).rows.length > 0;
  }

  /** finishSynced's statement for `outcome`, with its arguments. */
  #finishSyncedQuery(sourceId: number, fence: bigint, outcome: SyncedOutcome) {
    const { verified, mirrorPath } = outcome;
    const query = this.#finishSynced[(verified ? 1 : 0) + (mirrorPath !== undefined ? 2 : 0)]!;
    const args = finishSyncedArgs({
      targetSeq: outcome.targetSeq,
      checksum: outcome.checksum,
      nowMs: outcome.now.getTime(),
      mirrorPath: mirrorPath ?? null,
      fence,
      sourceId,
      epoch: outcome.epoch ?? null,
    });
    return { query, args };
  }

  /**
   * A sync's start: start(), then, if the guard let it through,
   * startAttempt() for it, back to back (in one transaction on SQLite).
   * Null, and no attempt recorded, when the guard rejected the start.
   * `epoch`: the placement epoch the sync read (undefined: not checked).
   */
  startSync(
    sourceId: number,
    fence: bigint,
    { trigger, now, epoch }: { trigger: SyncTrigger; now: Date; epoch?: number | undefined },
  ): Promise<{ row: RegistryRow; attemptId: number } | null> {
    const start = this.#start;
    const attempts = this.#attempts;
    return runBatch(
      this.#db,
      function* () {
        const started = (yield* run(start, now.getTime(), fence, sourceId, epoch ?? null)).rows[0];
        if (!started) return null;
        const attemptId = yield* insertAttempt(attempts, { sourceId, trigger, fence, now });
        return { row: toRegistryRow(started), attemptId };
      },
      // Every sync starts here: on PostgreSQL each statement goes on its own, a transaction would add two round trips to each start.
      { atomic: false },
    );
  }

  /**
   * A successful sync's end: finishSynced(), returning the row's request
   * counters as the write left them (requested above completed: a request is
   * still to be served; null when the guard rejected the write), then finishAttempt()
   * of `end.attemptId` with what `end.attempt` says given whether the guard let the
   * registry write through, back to back (in one transaction on SQLite).
   */
  finishSync(sourceId: number, fence: bigint, end: SyncEnd): Promise<RequestCounters | null> {
    const attempts = this.#attempts;
    const flip = this.#flip;
    const { query, args } = this.#finishSyncedQuery(sourceId, fence, end);
    const appends = appendChanges(this.#db, end.changes ?? [], end.now.getTime());
    const { movedTo, epoch, attemptId, attempt } = end;
    return runBatch(
      this.#db,
      function* () {
        const counters = countersOf((yield* run(query, ...args)).rows);
        // The registry write passed the placement guard, so the epoch is still the one read.
        if (counters !== null && movedTo !== undefined && epoch !== undefined) yield* run(flip, movedTo, sourceId, epoch);
        yield* completeAttempt(attempts, attemptId, attempt(counters !== null));
        // The changes this sync made are recorded only with the write that makes them.
        if (counters !== null) for (const append of appends) yield append;
        return counters;
      },
      { atomic: appends.length > 0 || movedTo !== undefined },
    );
  }

  /**
   * Guarded: records a failed sync; retried at `nextRetryAt` (null: only on
   * request). A request that arrived while the failing round ran was not
   * served by it, so the row is left pending for another round at once
   * instead of waiting out the backoff (an explicit request overrides backoff).
   */
  async finishFailed(sourceId: number, fence: bigint, outcome: FailedOutcome): Promise<boolean> {
    const nowMs = outcome.now.getTime();
    const changes = outcome.changes ?? [];
    const update = this.#fencedUpdateQuery({ sourceId, fence, nowMs, epoch: outcome.epoch }, {
      state: sql<RegistryState>`case when requested_seq > target_seq then 'pending' else 'failed' end`,
      retry_count: sql<number>`retry_count + 1`,
      next_retry_at: outcome.nextRetryAt?.getTime() ?? null,
      last_failure: truncateFailure(outcome.error),
      last_failure_at: nowMs,
      missing_on_primary: outcome.missing ? 1 : 0,
      next_run_at: sql<number | null>`case when requested_seq > target_seq then ${ms(nowMs)} else ${ms(outcome.nextRetryAt?.getTime() ?? null)} end`,
    });
    if (changes.length === 0) return Number((await update.executeTakeFirst()).numUpdatedRows) > 0;
    // The changes are recorded only with the write that makes them: a refused guard records nothing.
    return (await runBatch(this.#db, guardedList({ guards: [update.returning('source_id')], steps: appendChanges(this.#db, changes, nowMs) }))) !== null;
  }

  /** Guarded: puts a started row back to pending (clean shutdown or abort; the request is kept). */
  async releaseStarted(sourceId: number, fence: bigint, now: Date = new Date()): Promise<boolean> {
    const result = await this.#db
      .updateTable('registry')
      .set({ state: 'pending', fence, updated_at: now.getTime(), next_run_at: now.getTime() })
      .where('source_id', '=', sourceId)
      .where('state', '=', 'started')
      .where(fenceGuard(fence))
      .executeTakeFirst();
    return Number(result.numUpdatedRows) > 0;
  }

  /** Puts rows left started by dead workers back to pending (the caller checked their leases are gone). */
  async recoverStarted(sourceIds: number[], now: Date = new Date()): Promise<number> {
    if (sourceIds.length === 0) return 0;
    const result = await this.#db
      .updateTable('registry')
      .set({ state: 'pending', updated_at: now.getTime(), next_run_at: now.getTime() })
      .where('source_id', 'in', sourceIds)
      .where('state', '=', 'started')
      .executeTakeFirst();
    return Number(result.numUpdatedRows);
  }

  /** See {@link claimDue}. */
  claimDue(now: Date, options: { limit: number; claimMs: number }): Promise<SourceWithRegistry[]> {
    return claimDue({ db: this.#db, dialect: this.#dialect }, now, options);
  }

  /** See {@link dueForVerification}. */
  dueForVerification(now: Date, options: { intervalMs: number; limit: number }): Promise<SourceWithRegistry[]> {
    return dueForVerification(this.#db, now, options);
  }

  /** Guarded: records a periodic re-verification; a mismatch records a request so the mirror is re-synced. */
  async markVerification(
    sourceId: number,
    fence: bigint,
    outcome: { checksum: string | null; verified: boolean; now: Date },
  ): Promise<boolean> {
    const nowMs = outcome.now.getTime();
    return this.#fencedUpdate({ sourceId, fence, nowMs }, {
      checksum: outcome.checksum,
      verification_state: outcome.verified ? 'verified' : 'mismatch',
      ...(outcome.verified
        ? { verified_at: nowMs }
        : { state: 'pending' as const, requested_seq: sql<number>`requested_seq + 1`, next_retry_at: null, next_run_at: nowMs }),
    });
  }

  /** One fence-guarded UPDATE of a registry row; false when the guard (or a missing row) stopped it. */
  async #fencedUpdate(write: FencedWrite, values: UpdateObject<Schema, 'registry'>): Promise<boolean> {
    const result = await this.#fencedUpdateQuery(write, values).executeTakeFirst();
    return Number(result.numUpdatedRows) > 0;
  }

  /** A fence-guarded UPDATE (and placement-guarded when `write.epoch` is given). */
  #fencedUpdateQuery({ sourceId, fence, nowMs, epoch }: FencedWrite, values: UpdateObject<Schema, 'registry'>) {
    return this.#db
      .updateTable('registry')
      .set({ ...values, fence, updated_at: nowMs })
      .where('source_id', '=', sourceId)
      .where(fenceGuard(fence))
      .where(epochGuard(epoch ?? null));
  }

  /** The registry row of a source, or undefined. */
  async find(sourceId: number): Promise<RegistryRow | undefined> {
    const row = (await this.#get.execute(sourceId)).rows[0];
    return row ? toRegistryRow(row) : undefined;
  }

  /** @throws SourceNotFoundError when the source has no registry row. */
  async get(sourceId: number): Promise<RegistryRow> {
    const row = await this.find(sourceId);
    if (!row) throw new SourceNotFoundError(sourceId);
    return row;
  }

  /** Whether the row is pending with a request not yet served (what a worker should pick up). */
  async hasPendingRequest(sourceId: number): Promise<boolean> {
    return (await this.#pending.execute(sourceId)).rows.length > 0;
  }

  /** See {@link registryCounts}. */
  counts(): Promise<RegistryCounts> {
    return registryCounts(this.#db);
  }

  /** See {@link syncLag}; `now` defaults to the current time. */
  lag(now: Date = new Date()): Promise<SyncLag> {
    return syncLag(this.#db, { nowMs: now.getTime(), defaultIntervalMs: this.#defaultIntervalMs });
  }

  /** Records a running attempt (keeping the last 100 per source); returns its id. `now` defaults to the current time. */
  startAttempt(sourceId: number, { trigger, fence, now = new Date() }: { trigger: SyncTrigger; fence: bigint | null; now?: Date }): Promise<number> {
    // The prune may miss its turn on PostgreSQL (the next insert prunes): no transaction needed.
    return runBatch(this.#db, () => insertAttempt(this.#attempts, { sourceId, trigger, fence, now }), { atomic: false });
  }

  /** Completes an attempt with its result; false when it no longer exists. */
  finishAttempt(id: number, outcome: AttemptOutcome): Promise<boolean> {
    return runBatch(this.#db, () => completeAttempt(this.#attempts, id, outcome), { atomic: false });
  }

  /** The newest `limit` attempts of a source, newest first. */
  attempts(sourceId: number, limit = 20): Promise<SyncAttempt[]> {
    return listAttempts(this.#db, sourceId, limit);
  }
}
