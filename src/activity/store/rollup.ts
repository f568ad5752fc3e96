import { sql } from 'kysely';
import type { StoreDialect } from '../../store/database.js';
import type { ActivityDb, Resolution } from './tables.js';

/*
 * The rollup's statements.
 *
 * addToRollup — in: a bucket (minute start) and the deltas of one sample;
 *   out: nothing. An upsert that adds: total and samples are summed, peak
 *   is the highest. Several processes of a cluster add into the same rows,
 *   so their counts add up; rows are written in key order so that two
 *   PostgreSQL transactions never wait on each other's rows crosswise.
 * foldMinutes — in: a cutoff; out: how many minute rows were folded. The
 *   minute rows before it are deleted and their values added into the hour
 *   rows, in one transaction. The DELETE … RETURNING comes first: of two
 *   processes folding at once, the second's DELETE waits for the first's
 *   rows and then finds them gone, so no minute is counted twice.
 * pruneHours — in: a cutoff; out: how many hour rows were deleted.
 * readRollup — in: a resolution and a start; out: its rows from that
 *   bucket on, oldest first.
 * readMinutesByHour — in: a start (an hour); out: the minute rows from it
 *   on, summed into their hours by the database as toHours would (a day of
 *   minutes is 1,440 rows per series; summed, 24).
 */

/** One row's values: what is added (total, samples) and what is maxed (peak). */
export interface RollupValues {
  metric: string;
  labels: string;
  total: number;
  peak: number;
  samples: number;
}

export interface RollupRow extends RollupValues {
  resolution: Resolution;
  bucketAt: number;
}

/** Rows per INSERT: 7 parameters each, well under SQLite's and PostgreSQL's limits. */
const CHUNK = 500;
const HOUR_MS = 3_600_000;

export async function addToRollup(db: ActivityDb, dialect: StoreDialect, resolution: Resolution, bucketAt: number, values: readonly RollupValues[]): Promise<void> {
  const sorted = [...values].sort((a, b) => (a.metric === b.metric ? compare(a.labels, b.labels) : compare(a.metric, b.metric)));
  const rows = sorted.map((value) => ({ resolution, bucket_at: bucketAt, ...value }));
  for (let at = 0; at < rows.length; at += CHUNK) await upsertAdd(db, dialect, rows.slice(at, at + CHUNK));
}

async function upsertAdd(db: ActivityDb, dialect: StoreDialect, rows: { resolution: Resolution; bucket_at: number; metric: string; labels: string; total: number; peak: number; samples: number }[]): Promise<void> {
  if (rows.length === 0) return;
  const higher = dialect === 'postgres' ? sql<number>`greatest(activity_rollup.peak, excluded.peak)` : sql<number>`max(activity_rollup.peak, excluded.peak)`;
  await db
    .insertInto('activity_rollup')
    .values(rows)
    .onConflict((conflict) =>
      conflict.columns(['resolution', 'bucket_at', 'metric', 'labels']).doUpdateSet({
        total: sql<number>`activity_rollup.total + excluded.total`,
        peak: higher,
        samples: sql<number>`activity_rollup.samples + excluded.samples`,
      }),
    )
    .execute();
}

export async function foldMinutes(db: ActivityDb, dialect: StoreDialect, before: number): Promise<number> {
  return db.transaction().execute(async (tx) => {
    const folded = await tx
      .deleteFrom('activity_rollup')
      .where('resolution', '=', 'minute')
      .where('bucket_at', '<', before)
      .returning(['bucket_at', 'metric', 'labels', 'total', 'peak', 'samples'])
      .execute();
    const byHour = new Map<number, RollupValues[]>();
    for (const row of toHours(folded.map((each) => ({ ...numbers(each), resolution: 'minute' as const })))) {
      const { bucketAt, resolution: _resolution, ...values } = row;
      byHour.set(bucketAt, [...(byHour.get(bucketAt) ?? []), values]);
    }
    for (const [hour, values] of byHour) await addToRollup(tx, dialect, 'hour', hour, values);
    return folded.length;
  });
}

/** Rows summed into their hours, as an hour row of them would be: totals and samples added, the highest peak. */
export function toHours(rows: readonly RollupRow[]): RollupRow[] {
  const hours = new Map<string, RollupRow>();
  for (const row of rows) {
    const bucketAt = Math.floor(row.bucketAt / HOUR_MS) * HOUR_MS;
    const key = `${bucketAt}\u0000${row.metric}\u0000${row.labels}`;
    const sum = hours.get(key) ?? { resolution: 'hour', bucketAt, metric: row.metric, labels: row.labels, total: 0, peak: 0, samples: 0 };
    sum.total += row.total;
    sum.peak = Math.max(sum.peak, row.peak);
    sum.samples += row.samples;
    hours.set(key, sum);
  }
  return [...hours.values()];
}

export async function pruneHours(db: ActivityDb, before: number): Promise<number> {
  const result = await db.deleteFrom('activity_rollup').where('resolution', '=', 'hour').where('bucket_at', '<', before).executeTakeFirst();
  return Number(result.numDeletedRows);
}

export async function readRollup(db: ActivityDb, resolution: Resolution, from: number): Promise<RollupRow[]> {
  const rows = await db
    .selectFrom('activity_rollup')
    .select(['bucket_at', 'metric', 'labels', 'total', 'peak', 'samples'])
    .where('resolution', '=', resolution)
    .where('bucket_at', '>=', from)
    .orderBy('bucket_at')
    .orderBy('metric')
    .orderBy('labels')
    .execute();
  return rows.map((row) => ({ ...numbers(row), resolution }));
}

export async function readMinutesByHour(db: ActivityDb, from: number): Promise<RollupRow[]> {
  // A literal, not a parameter: PostgreSQL matches the select's expression to the GROUP BY's only when they are the same text.
  const hourOf = sql<number | string>`bucket_at - bucket_at % ${sql.lit(HOUR_MS)}`;
  const rows = await db
    .selectFrom('activity_rollup')
    .select([
      hourOf.as('hour_at'),
      'metric',
      'labels',
      sql<number | string>`sum(total)`.as('total'),
      sql<number | string>`max(peak)`.as('peak'),
      sql<number | string>`sum(samples)`.as('samples'),
    ])
    .where('resolution', '=', 'minute')
    .where('bucket_at', '>=', from)
    .groupBy([hourOf, 'metric', 'labels'])
    .orderBy(hourOf)
    .orderBy('metric')
    .orderBy('labels')
    .execute();
  return rows.map(({ hour_at, ...row }) => ({ ...numbers({ ...row, bucket_at: hour_at }), resolution: 'hour' as const }));
}

/** A row as read, its numbers made numbers (see store/columns.ts). */
function numbers(row: { bucket_at: number | string; metric: string; labels: string; total: number | string; peak: number | string; samples: number | string }): Omit<RollupRow, 'resolution'> {
  return { bucketAt: Number(row.bucket_at), metric: row.metric, labels: row.labels, total: Number(row.total), peak: Number(row.peak), samples: Number(row.samples) };
}

const compare = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);
