import { sql, type Kysely } from 'kysely';
import { run, runBatch } from '../../store/batch.js';
import type { Database } from '../../store/database.js';
import { ms } from './registry-statements.js';
import { inIdOrder, selectSourcesByIds, toSourceWithRegistry } from './rows.js';
import type { RegistryState, Schema, SourceWithRegistry } from '../../store/types.js';

/*
 * The registry's read-only queries for the scheduler and the overview: what
 * is due, what is due for re-verification, how many rows are in each state.
 * The writes are in registry.ts.
 */

/** Registry counts by state, plus verification and missing-upstream totals. */
export type RegistryCounts = Record<RegistryState, number> & { verified: number; mismatch: number; missing: number };

/**
 * Claims up to `limit` rows due at `now` (next_run_at reached, earliest
 * first) and returns them with their sources: in one transaction the rows
 * are picked through next_run_at's index (PostgreSQL: FOR UPDATE SKIP
 * LOCKED, so two schedulers never claim one row) and their next_run_at
 * moved `claimMs` ahead. A row whose job then runs gets its next time from
 * the sync; one whose job was lost comes due again when the claim runs
 * out (the sweep). Cost: the rows due, not the fleet.
 *
 * Statements (one transaction):
 *   UPDATE registry SET next_run_at = :now + :claimMs
 *     WHERE source_id IN (SELECT source_id FROM registry WHERE next_run_at <= :now
 *                         ORDER BY next_run_at LIMIT :limit [FOR UPDATE SKIP LOCKED])
 *     RETURNING source_id
 *   SELECT sources ⨝ registry WHERE id IN (those) AND enabled = 1
 * Stores: the claimed rows' next_run_at. Returns: the claimed enabled sources,
 * in the order they were due.
 */
export async function claimDue(database: Pick<Database, 'db' | 'dialect'>, now: Date, options: { limit: number; claimMs: number }): Promise<SourceWithRegistry[]> {
  const { db, dialect } = database;
  const nowMs = now.getTime();
  const limit = Math.max(0, Math.floor(options.limit));
  if (limit === 0) return [];
  let due = db.selectFrom('registry').select('source_id').where('next_run_at', '<=', nowMs).orderBy('next_run_at').orderBy('source_id').limit(limit);
  if (dialect === 'postgres') due = due.forUpdate().skipLocked();
  const { picked, rows } = await runBatch(db, function* () {
    const ids = (yield* run(due)).rows.map((row) => Number(row.source_id));
    if (ids.length === 0) return { picked: ids, rows: [] };
    yield* run(db.updateTable('registry').set({ next_run_at: ms(nowMs + Math.round(options.claimMs)) }).where('source_id', 'in', ids));
    return { picked: ids, rows: (yield* run(selectSourcesByIds(db, ids).where('s.enabled', '=', 1))).rows };
  });
  return inIdOrder(rows.map(toSourceWithRegistry), picked);
}

/**
 * Enabled, synced sources whose mirror was last verified more than
 * `intervalMs` ago (or never): candidates for periodic re-verification.
 */
export async function dueForVerification(db: Kysely<Schema>, now: Date, options: { intervalMs: number; limit: number }): Promise<SourceWithRegistry[]> {
  const cutoff = now.getTime() - Math.round(options.intervalMs);
  const limit = Math.max(0, Math.floor(options.limit));
  if (limit === 0) return [];
  // The ids off registry_verify_idx (state, verified_at), in its order: never
  // verified first, then the oldest verification. The registry alone, since a
  // join here makes PostgreSQL scan every source; a synced row has a next
  // run unless its source is disabled, so that says enabled without one.
  const pick = () => db.selectFrom('registry').select('source_id').where('state', '=', 'synced').where('next_run_at', 'is not', null);
  const never = await pick().where('verified_at', 'is', null).orderBy('source_id').limit(limit).execute();
  const stale = never.length < limit ? await pick().where('verified_at', '<=', cutoff).orderBy('verified_at').orderBy('source_id').limit(limit - never.length).execute() : [];
  const ids = [...never, ...stale].map((row) => Number(row.source_id));
  if (ids.length === 0) return [];
  // Enabled is checked on the source itself.
  const rows = await selectSourcesByIds(db, ids).where('s.enabled', '=', 1).execute();
  return inIdOrder(rows.map(toSourceWithRegistry), ids);
}

/** Rows per state (every state present, 0 when none) and verification / missing totals. */
export async function registryCounts(db: Kysely<Schema>): Promise<RegistryCounts> {
  const rows = await db
    .selectFrom('registry')
    .select((eb) => [
      'state',
      eb.fn.countAll().as('n'),
      eb.fn.sum<number>(sql`case when verification_state = 'verified' then 1 else 0 end`).as('verified'),
      eb.fn.sum<number>(sql`case when verification_state = 'mismatch' then 1 else 0 end`).as('mismatch'),
      eb.fn.sum<number>('missing_on_primary').as('missing'),
    ])
    .groupBy('state')
    .execute();
  const counts: RegistryCounts = { pending: 0, started: 0, synced: 0, failed: 0, verified: 0, mismatch: 0, missing: 0 };
  for (const row of rows) {
    counts[row.state] = Number(row.n);
    counts.verified += Number(row.verified ?? 0);
    counts.mismatch += Number(row.mismatch ?? 0);
    counts.missing += Number(row.missing ?? 0);
  }
  return counts;
}

/** How far behind their schedule the interval-scheduled sources are (see {@link syncLag}). */
export interface SyncLag {
  /** Sources whose last successful sync is older than twice their interval (never synced: added that long ago). */
  overdue: number;
  /** Age in ms of the oldest last successful sync among them (never synced: since added); 0 when there is none. */
  oldestSuccessAgeMs: number;
}

/**
 * The sync lag of the enabled sources scheduled by interval, at `nowMs`, in
 * one aggregate statement (it runs at every scrape of /metrics):
 *   SELECT sum(case when coalesce(r.last_synced_at, s.created_at) < :now - 2 * coalesce(s.interval_ms, :default) then 1 else 0 end),
 *          min(coalesce(r.last_synced_at, s.created_at))
 *     FROM sources s JOIN registry r ON r.source_id = s.id
 *    WHERE s.enabled = 1 AND s.cron IS NULL AND r.missing_on_primary = 0
 * Cron sources are left out (their due times are not an interval SQL can
 * compare against), and so are sources whose upstream is gone (they cannot
 * catch up; forgesync_registry_sources{state="missing"} reports them).
 * Twice the interval: a source synced on time is at most one interval old,
 * plus its sync's duration and the scheduler's tick. Stores nothing.
 */
export async function syncLag(db: Kysely<Schema>, options: { nowMs: number; defaultIntervalMs: number }): Promise<SyncLag> {
  const lastSuccess = sql<number>`coalesce(r.last_synced_at, s.created_at)`;
  const overdueBefore = sql<number>`${ms(options.nowMs)} - 2 * coalesce(s.interval_ms, ${ms(options.defaultIntervalMs)})`;
  const row = await db
    .selectFrom('sources as s')
    .innerJoin('registry as r', 'r.source_id', 's.id')
    .select((eb) => [
      eb.fn.sum<number | string | null>(sql`case when ${lastSuccess} < ${overdueBefore} then 1 else 0 end`).as('overdue'),
      eb.fn.min<number | string | null>(lastSuccess).as('oldest'),
    ])
    .where('s.enabled', '=', 1)
    .where('s.cron', 'is', null)
    .where('r.missing_on_primary', '=', 0)
    .executeTakeFirstOrThrow();
  const oldest = row.oldest === null ? null : Number(row.oldest);
  return { overdue: Number(row.overdue ?? 0), oldestSuccessAgeMs: oldest === null ? 0 : Math.max(0, options.nowMs - oldest) };
}
