import type { Kysely, Migration } from 'kysely';
import type { StoreDialect } from '../database.js';

/**
 * `mirror_housekeeping`: one row per source, what housekeeping last found
 * and did on its mirror (replication/store/housekeeping.ts), deleted with
 * the source (foreign key, cascade). Times are epoch milliseconds.
 */
export function housekeeping(dialect: StoreDialect): Migration {
  const big = dialect === 'postgres' ? 'bigint' : 'integer';
  return {
    async up(db: Kysely<any>) {
      await db.schema
        .createTable('mirror_housekeeping')
        .addColumn('source_id', big, (c) => c.primaryKey().references('sources.id').onDelete('cascade'))
        .addColumn('measured_at', big, (c) => c.notNull())
        .addColumn('last_run_at', big)
        .addColumn('last_tasks', 'text')
        .addColumn('packs', 'integer', (c) => c.notNull())
        .addColumn('cruft_packs', 'integer', (c) => c.notNull())
        .addColumn('loose_objects', 'integer', (c) => c.notNull())
        .addColumn('loose_refs', 'integer', (c) => c.notNull())
        .execute();
    },
    async down(db: Kysely<any>) {
      await db.schema.dropTable('mirror_housekeeping').execute();
    },
  };
}
