import type { Kysely, Migration } from 'kysely';
import type { StoreDialect } from '../database.js';

/**
 * `imports.retry_at` and `imports.transient_failures`: a run that failed
 * for a transient cause (the database refused for a while, GitHub kept
 * answering 5xx) is resumed by the scheduler at `retry_at`, on its own;
 * `transient_failures` counts such runs in a row, so the pause before the
 * next one grows (see importer/run/coordinator.ts). A permanent failure
 * leaves `retry_at` null: it waits for `import resume` (or its next sync).
 */
export function importRetryAt(dialect: StoreDialect): Migration {
  const big = dialect === 'postgres' ? 'bigint' : 'integer';
  return {
    async up(db: Kysely<any>) {
      await db.schema.alterTable('imports').addColumn('retry_at', big).execute();
      await db.schema.alterTable('imports').addColumn('transient_failures', 'integer', (c) => c.notNull().defaultTo(0)).execute();
    },
    async down(db: Kysely<any>) {
      await db.schema.alterTable('imports').dropColumn('transient_failures').execute();
      await db.schema.alterTable('imports').dropColumn('retry_at').execute();
    },
  };
}
