import { sql, type Kysely, type Migration } from 'kysely';
import type { StoreDialect } from '../database.js';

/** `sync_attempts`: the recent history of each source, pruned on insert. */
export function syncAttempts(dialect: StoreDialect): Migration {
  const pg = dialect === 'postgres';
  const big = pg ? 'bigint' : 'integer';
  return {
    async up(db: Kysely<any>) {
      await db.schema
        .createTable('sync_attempts')
        .addColumn('id', pg ? 'bigserial' : 'integer', (c) => (pg ? c.primaryKey() : c.primaryKey().autoIncrement()))
        .addColumn('source_id', big, (c) => c.notNull().references('sources.id').onDelete('cascade'))
        .addColumn('trigger', 'text', (c) => c.notNull())
        .addColumn('started_at', big, (c) => c.notNull())
        .addColumn('finished_at', big)
        .addColumn('result', 'text')
        .addColumn('error', 'text')
        .addColumn('refs_changed', 'integer')
        .addColumn('duration_ms', big)
        .addColumn('fence', big)
        .addCheckConstraint(
          'sync_attempts_result_check',
          sql`result is null or result in ('synced', 'noop', 'failed', 'missing', 'skipped')`,
        )
        .execute();

      await db.schema.createIndex('sync_attempts_source_idx').on('sync_attempts').columns(['source_id', 'id']).execute();
    },

    async down(db: Kysely<any>) {
      await db.schema.dropTable('sync_attempts').execute();
    },
  };
}
