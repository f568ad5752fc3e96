import type { Kysely, Migration } from 'kysely';
import type { StoreDialect } from '../database.js';

/**
 * The activity module's tables (src/activity/store/):
 * `activity_rollup`, what the processes' metrics counted, one row per
 * (resolution, bucket, metric, labels): per minute for a day, then folded
 * into per-hour rows kept a month (bounded by the declared series, see
 * src/activity/series.ts); and `activity_failures`, one row per failing
 * subject (a source) with the group of its error and when that error was
 * first seen (the last failure is the registry's), deleted when the subject
 * recovers.
 */
export function activity(dialect: StoreDialect): Migration {
  const big = dialect === 'postgres' ? 'bigint' : 'integer';
  return {
    async up(db: Kysely<any>) {
      await db.schema
        .createTable('activity_rollup')
        .addColumn('resolution', 'text', (c) => c.notNull())
        .addColumn('bucket_at', big, (c) => c.notNull())
        .addColumn('metric', 'text', (c) => c.notNull())
        .addColumn('labels', 'text', (c) => c.notNull())
        .addColumn('total', 'double precision', (c) => c.notNull())
        .addColumn('peak', 'double precision', (c) => c.notNull())
        .addColumn('samples', big, (c) => c.notNull())
        .addPrimaryKeyConstraint('activity_rollup_pk', ['resolution', 'bucket_at', 'metric', 'labels'])
        .execute();
      await db.schema
        .createTable('activity_failures')
        .addColumn('kind', 'text', (c) => c.notNull())
        .addColumn('subject', 'text', (c) => c.notNull())
        .addColumn('group_id', 'text', (c) => c.notNull())
        .addColumn('first_seen_at', big, (c) => c.notNull())
        .addPrimaryKeyConstraint('activity_failures_pk', ['kind', 'subject'])
        .execute();
    },
    async down(db: Kysely<any>) {
      await db.schema.dropTable('activity_failures').execute();
      await db.schema.dropTable('activity_rollup').execute();
    },
  };
}
