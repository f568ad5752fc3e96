import type { ColumnType, Kysely } from 'kysely';
import type { Big, Millis } from '../../store/columns.js';
import type { Database } from '../../store/database.js';

/** A resolution of the rollup: per-minute rows for a day, per-hour rows for a month. */
export type Resolution = 'minute' | 'hour';

/** A DOUBLE PRECISION column (REAL on SQLite): read and written as a number (a text cast aside, see store/columns.ts). */
type Double = ColumnType<number | string, number, number>;

/** `activity_rollup` (migration 024). */
export interface ActivityRollupTable {
  resolution: Resolution;
  /** Start of the minute or hour, epoch ms. */
  bucket_at: Millis;
  metric: string;
  /** Kept labels as JSON with sorted keys, `{}` for none. */
  labels: string;
  total: Double;
  peak: Double;
  samples: Big;
}

/** `activity_failures` (migration 024): one row per failing subject. */
export interface ActivityFailuresTable {
  /** What failed: `source` (the one kind so far). */
  kind: string;
  subject: string;
  group_id: string;
  first_seen_at: Millis;
}

/** A type, not an interface: Kysely's withTables wants an index signature, which only type aliases have implicitly. */
export type ActivitySchema = {
  activity_rollup: ActivityRollupTable;
  activity_failures: ActivityFailuresTable;
};

/** The activity module's view of the registry database: its own tables only. */
export type ActivityDb = Kysely<ActivitySchema>;

export function activityDb(database: Pick<Database, 'db'>): ActivityDb {
  return database.db.withTables<ActivitySchema>() as unknown as ActivityDb;
}
