import { sql, type Kysely } from 'kysely';
import { selectSourcesWithRegistry, toSourceWithRegistry } from './rows.js';
import type { RegistryState, Schema, SourceWithRegistry } from './types.js';

/*
 * The registry's read-only queries for the scheduler and the overview: what
 * is due, what is due for re-verification, how many rows are in each state.
 * The writes are in registry.ts.
 */

/** Registry counts by state, plus verification and missing-upstream totals. */
export type RegistryCounts = Record<RegistryState, number> & { verified: number; mismatch: number; missing: number };

/**
 * Enabled sources with work to do at `now`: pending; failed whose
 * next_retry_at has come (missing upstreams included, on the slow cadence
 * the caller set); synced whose interval (or `defaultIntervalMs`) has
 * passed since the last sync; started (the caller checks the lease).
 * Oldest last attempt first, never-attempted first of all.
 */
export async function dueSources(db: Kysely<Schema>, now: Date, options: { defaultIntervalMs: number; limit: number }): Promise<SourceWithRegistry[]> {
  const nowMs = now.getTime();
  const defaultMs = Math.round(options.defaultIntervalMs);
  const rows = await selectSourcesWithRegistry(db)
    .where('s.enabled', '=', 1)
    .where(
      sql<boolean>`(r.state in ('pending', 'started')
        or (r.state = 'failed' and r.next_retry_at <= ${nowMs})
        or (r.state = 'synced' and (r.last_synced_at is null
            or r.last_synced_at + coalesce(s.interval_ms, ${defaultMs}) <= ${nowMs})))`,
    )
    .orderBy(sql`case when r.last_attempt_at is null then 0 else 1 end`)
    .orderBy('r.last_attempt_at')
    .orderBy('s.id')
    .limit(Math.max(0, Math.floor(options.limit)))
    .execute();
  return rows.map(toSourceWithRegistry);
}

/**
 * Enabled, synced sources whose mirror was last verified more than
 * `intervalMs` ago (or never): candidates for periodic re-verification.
 */
export async function dueForVerification(db: Kysely<Schema>, now: Date, options: { intervalMs: number; limit: number }): Promise<SourceWithRegistry[]> {
  const cutoff = now.getTime() - Math.round(options.intervalMs);
  const rows = await selectSourcesWithRegistry(db)
    .where('s.enabled', '=', 1)
    .where('r.state', '=', 'synced')
    .where((eb) => eb.or([eb('r.verified_at', 'is', null), eb('r.verified_at', '<=', cutoff)]))
    .orderBy(sql`coalesce(r.verified_at, 0)`)
    .limit(Math.max(0, Math.floor(options.limit)))
    .execute();
  return rows.map(toSourceWithRegistry);
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
