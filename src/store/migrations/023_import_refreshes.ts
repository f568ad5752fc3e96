import type { Kysely, Migration } from 'kysely';
import type { StoreDialect } from '../database.js';

/**
 * `import_refreshes`: the objects GitHub's webhooks said changed, per import,
 * waiting to be fetched again (see src/importer/refresh/). One row per
 * (import, target): deliveries naming the same object while it waits
 * coalesce into it, each bumping `seq`, so the refresh that read `seq` n
 * removes the row only if no delivery came after it read (a later one may
 * describe a change its answer predates). `detail` is the latest delivery's
 * hint (JSON: the action deleted, the issue a comment is on…), never taken
 * as the object's state. `requested_at`: when the first waiting delivery
 * came (the freshness clock); `last_at`: when the latest did (a refresh
 * waits for a burst to settle). Rows go with their import.
 */
export function importRefreshes(dialect: StoreDialect): Migration {
  const big = dialect === 'postgres' ? 'bigint' : 'integer';
  return {
    async up(db: Kysely<any>) {
      await db.schema
        .createTable('import_refreshes')
        .addColumn('import_id', big, (c) => c.notNull().references('imports.id').onDelete('cascade'))
        .addColumn('target', 'text', (c) => c.notNull())
        .addColumn('seq', big, (c) => c.notNull())
        .addColumn('detail', 'text', (c) => c.notNull())
        .addColumn('requested_at', big, (c) => c.notNull())
        .addColumn('last_at', big, (c) => c.notNull())
        .addPrimaryKeyConstraint('import_refreshes_pk', ['import_id', 'target'])
        .execute();
    },
    async down(db: Kysely<any>) {
      await db.schema.dropTable('import_refreshes').execute();
    },
  };
}
