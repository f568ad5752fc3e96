import { sql, type Kysely } from 'kysely';
import { fenceText, registryColumns, type RegistryRecord } from './rows.js';
import { fenceGuard, prepared, requestedChanges } from '../../store/sql.js';
import type { RegistryState, Schema } from '../../store/types.js';

/*
 * The statements every sync runs on the registry, compiled once (see
 * PreparedQuery in sql.ts). Each says what it takes (its arguments, in
 * order), what it writes and what it returns; RegistryRepository runs them.
 */

/** A time or duration in milliseconds as a bigint in SQL (PostgreSQL would read a bare parameter as integer or text). */
export const ms = (value: unknown) => sql<number>`cast(${value} as bigint)`;

/** A source without an interval of its own is due this long after its last sync, unless RegistryTiming says otherwise. */
export const DEFAULT_SYNC_INTERVAL_MS = 3_600_000;

/** When rows come due again (see next_run_at, migration 009). */
export interface RegistryTiming {
  /** After a sync, a source without an interval of its own is due this much later. Default 1 hour. */
  defaultIntervalMs?: number;
  /** A started row is looked at again this often (did its worker die?). Default 30 s. */
  startedRecheckMs?: number;
}

/** What finishSynced writes, by name (finishSyncedArgs puts it in the statement's order). */
export interface FinishSyncedValues {
  /** The requested_seq the sync served. */
  targetSeq: number;
  checksum: string | null;
  nowMs: number;
  /** Written only by the variants "with path". */
  mirrorPath: string | null;
  fence: bigint;
  sourceId: number;
  /** The placement epoch the sync read; null: not checked. */
  epoch: number | null;
}

/** finishSynced's arguments, in the order its statement takes them. */
export type FinishSyncedArgs = [targetSeq: number, checksum: string | null, nowMs: number, mirrorPath: string | null, fence: bigint, sourceId: number, epoch: number | null];

/** `values` as finishSynced's arguments (the one place besides the statement that knows their order). */
export function finishSyncedArgs(values: FinishSyncedValues): FinishSyncedArgs {
  return [values.targetSeq, values.checksum, values.nowMs, values.mirrorPath, values.fence, values.sourceId, values.epoch];
}

/**
 * The placement guard: a write on behalf of the worker of a source's shard
 * applies only while the source is still placed as that worker read it
 * (`epoch`, see migration 008); null: no placement to check.
 */
export function epochGuard(epoch: unknown) {
  return sql<boolean>`(cast(${epoch} as integer) is null or (select s.placement_epoch from sources s where s.id = registry.source_id) = cast(${epoch} as integer))`;
}

/**
 * - request (now, source id): requested_seq + 1, a settled row pending and due now. Returns requested_seq.
 * - start (now, fence, source id, epoch): the row started, serving requested_seq, looked at again
 *   after startedRecheckMs; fence- and placement-guarded. Returns the row.
 * - flip (shard, source id, epoch): a move's end: the source placed on `shard` under epoch + 1,
 *   only if it still has `epoch`. Returns its id.
 * - finishSynced[verified + 2 × with path] (FinishSyncedArgs): a successful sync; synced (due after
 *   its interval) or pending again (due now); guarded. Returns the request counters.
 * - get (source id): the row. pending (source id): the row if a request is unserved.
 */
export function registryStatements(db: Kysely<Schema>, timing: RegistryTiming = {}) {
  const { defaultIntervalMs = DEFAULT_SYNC_INTERVAL_MS, startedRecheckMs = 30_000 } = timing;
  const request = prepared<[nowMs: number, sourceId: number], { requested_seq: number }>(db, (arg) =>
    db.updateTable('registry').set(requestedChanges(arg(0))).where('source_id', '=', arg(1)).returning('requested_seq'),
  );
  const start = prepared<[nowMs: number, fence: bigint, sourceId: number, epoch: number | null], RegistryRecord>(db, (arg) =>
    db
      .updateTable('registry')
      .set({
        state: 'started',
        last_attempt_at: arg(0),
        target_seq: sql<number>`requested_seq`,
        fence: arg(1),
        updated_at: arg(0),
        next_run_at: sql<number>`${ms(arg(0))} + ${ms(startedRecheckMs)}`,
      })
      .where('source_id', '=', arg(2))
      .where(fenceGuard(arg(1)))
      .where(epochGuard(arg(3)))
      .returning([...registryColumns, fenceText]),
  );
  const flip = prepared<[shard: string, sourceId: number, epoch: number], { id: number }>(db, (arg) =>
    db
      .updateTable('sources')
      .set({ shard_id: arg(0), move_to: null, placement_epoch: sql<number>`placement_epoch + 1` })
      .where('id', '=', arg(1))
      .where('placement_epoch', '=', arg(2))
      .returning('id'),
  );
  const finishSynced = [0, 1, 2, 3].map((variant) => {
    const verified = (variant & 1) !== 0;
    const withPath = (variant & 2) !== 0;
    return prepared<FinishSyncedArgs, { requested_seq: number; completed_seq: number }>(db, (arg) => {
      // In FinishSyncedArgs order; the mirror path (3) only where the variant writes it (a slot taken must be a parameter).
      const [target, checksum, nowMs, fence, sourceId, epoch] = [arg(0), arg(1), arg(2), arg(4), arg(5), arg(6)];
      return db
        .updateTable('registry')
        .set({
          completed_seq: sql<number>`case when completed_seq > ${target} then completed_seq else ${target} end`,
          state: verified ? sql<RegistryState>`case when requested_seq > ${target} then 'pending' else 'synced' end` : 'pending',
          retry_count: 0,
          next_retry_at: null,
          last_synced_at: nowMs,
          missing_on_primary: 0,
          checksum,
          verification_state: verified ? 'verified' : 'mismatch',
          verified_at: verified ? nowMs : sql<number | null>`verified_at`,
          ...(withPath ? { mirror_path: arg(3) } : {}),
          // Pending again: due now; synced: after its interval.
          next_run_at: verified
            ? sql<number>`case when requested_seq > ${target} then ${ms(nowMs)}
                else ${ms(nowMs)} + coalesce((select s.interval_ms from sources s where s.id = registry.source_id), ${ms(defaultIntervalMs)}) end`
            : nowMs,
          fence,
          updated_at: nowMs,
        })
        .where('source_id', '=', sourceId)
        .where(fenceGuard(fence))
        .where(epochGuard(epoch))
        .returning(['requested_seq', 'completed_seq']);
    });
  });
  const get = prepared<[sourceId: number], RegistryRecord>(db, (arg) =>
    db
      .selectFrom('registry')
      .select([...registryColumns, fenceText])
      .where('source_id', '=', arg(0)),
  );
  const pending = prepared<[sourceId: number], { source_id: number }>(db, (arg) =>
    db
      .selectFrom('registry')
      .select('source_id')
      .where('source_id', '=', arg(0))
      .where('state', '=', 'pending')
      .whereRef('requested_seq', '>', 'completed_seq'),
  );
  return { request, start, flip, finishSynced, get, pending };
}

export type RegistryStatements = ReturnType<typeof registryStatements>;
