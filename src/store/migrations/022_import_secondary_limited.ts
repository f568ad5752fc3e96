import type { Kysely, Migration } from 'kysely';
import type { StoreDialect } from '../database.js';

/**
 * `import_progress.secondary_limited`: the secondary-limit answers (403/429
 * "secondary rate limit") each committed batch of an import got, so
 * `import status` shows how often the import ran into GitHub's secondary
 * limit (issue 29: integrations that keep hitting it risk a ban; the pacer
 * adapts, and this shows whether it did). Only progress rows carry it: no
 * import counted it before this column existed, so the `imports` row needs none.
 */
export function importSecondaryLimited(dialect: StoreDialect): Migration {
  const big = dialect === 'postgres' ? 'bigint' : 'integer';
  return {
    async up(db: Kysely<any>) {
      await db.schema.alterTable('import_progress').addColumn('secondary_limited', big, (c) => c.notNull().defaultTo(0)).execute();
    },
    async down(db: Kysely<any>) {
      await db.schema.alterTable('import_progress').dropColumn('secondary_limited').execute();
    },
  };
}
