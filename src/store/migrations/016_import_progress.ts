import type { Kysely, Migration } from 'kysely';
import type { StoreDialect } from '../database.js';

/**
 * `import_progress`: what each committed batch of an import (a page, a
 * per-object job's answer) adds to its progress — request counters, the
 * time of the write, the coordinator's rate budgets — one row appended per
 * batch in the batch's own transaction (see importer/store/progress.ts).
 * Until now every batch updated these on the `imports` row itself, so every
 * writer of an import queued on that row's lock, and one paused inside its
 * transaction held them all. The `imports` columns stay as the part counted
 * before this table existed; readers add the rows to them.
 */
export function importProgress(dialect: StoreDialect): Migration {
  const pg = dialect === 'postgres';
  const big = pg ? 'bigint' : 'integer';
  return {
    async up(db: Kysely<any>) {
      await db.schema
        .createTable('import_progress')
        .addColumn('id', pg ? 'bigserial' : 'integer', (c) => (pg ? c.primaryKey() : c.primaryKey().autoIncrement()))
        .addColumn('import_id', big, (c) => c.notNull().references('imports.id').onDelete('cascade'))
        .addColumn('at', big, (c) => c.notNull())
        .addColumn('requests_total', big, (c) => c.notNull().defaultTo(0))
        .addColumn('requests_counted', big, (c) => c.notNull().defaultTo(0))
        .addColumn('requests_not_modified', big, (c) => c.notNull().defaultTo(0))
        .addColumn('requests_retried', big, (c) => c.notNull().defaultTo(0))
        .addColumn('rate_limit_waits', big, (c) => c.notNull().defaultTo(0))
        .addColumn('rate_limit_wait_ms', big, (c) => c.notNull().defaultTo(0))
        .addColumn('rate', 'text')
        .execute();
      await db.schema.createIndex('import_progress_import_idx').on('import_progress').columns(['import_id', 'id']).execute();
    },
    async down(db: Kysely<any>) {
      await db.schema.dropTable('import_progress').execute();
    },
  };
}
