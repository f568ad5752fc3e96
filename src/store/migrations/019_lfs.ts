import type { Kysely, Migration } from 'kysely';
import type { StoreDialect } from '../database.js';

/**
 * Git LFS (the lfs module, see src/lfs/store/objects.ts):
 * - `lfs_objects`: which source references which LFS object (its oid and
 *   size as the pointer says), and where the object stands for it: `pending`
 *   (to fetch), `present` (stored under `<dataDir>/lfs/objects`, shared by
 *   every source that references it), `missing` (the upstream does not have
 *   it), `failed` (retried after the next sync), `refused` (over the size
 *   cap), with the last error. Rows go with their source.
 * - `lfs_scans`: per source, the ref tips whose history was scanned for
 *   pointers (a JSON array), so that a sync scans only what is new, and the
 *   refs checksum they had.
 */
export function lfs(dialect: StoreDialect): Migration {
  const big = dialect === 'postgres' ? 'bigint' : 'integer';
  return {
    async up(db: Kysely<any>) {
      await db.schema
        .createTable('lfs_objects')
        .addColumn('source_id', big, (c) => c.notNull().references('sources.id').onDelete('cascade'))
        .addColumn('oid', 'text', (c) => c.notNull())
        .addColumn('size', big, (c) => c.notNull())
        .addColumn('state', 'text', (c) => c.notNull())
        .addColumn('error', 'text')
        .addColumn('updated_at', big, (c) => c.notNull())
        .addPrimaryKeyConstraint('lfs_objects_pk', ['source_id', 'oid'])
        .execute();
      await db.schema.createIndex('lfs_objects_oid_idx').on('lfs_objects').column('oid').execute();
      await db.schema
        .createTable('lfs_scans')
        .addColumn('source_id', big, (c) => c.primaryKey().references('sources.id').onDelete('cascade'))
        .addColumn('tips', 'text', (c) => c.notNull())
        .addColumn('checksum', 'text')
        .addColumn('scanned_at', big, (c) => c.notNull())
        .execute();
    },
    async down(db: Kysely<any>) {
      await db.schema.dropTable('lfs_scans').execute();
      await db.schema.dropTable('lfs_objects').execute();
    },
  };
}
