import type { Kysely, Migration } from 'kysely';
import type { StoreDialect } from '../database.js';

/**
 * `change_staged` (PostgreSQL only): changes appended but not numbered yet.
 * Until now every appending transaction took the next numbers from
 * `change_head`'s single row, so on PostgreSQL writers committed one at a
 * time and one paused inside its transaction held all the others. Writers
 * now insert here (ids from a sequence: no lock) and readers move what has
 * committed into `change_log`, numbered in id order (store/change-log.ts,
 * "Numbering"). Same columns as `change_log`, with `id` for `seq`. SQLite
 * keeps numbering in the writer (its writers take turns anyway), so the
 * table is not created there.
 */
export function changeStaged(dialect: StoreDialect): Migration {
  return {
    async up(db: Kysely<any>) {
      if (dialect !== 'postgres') return;
      await db.schema
        .createTable('change_staged')
        .addColumn('id', 'bigserial', (c) => c.primaryKey())
        .addColumn('type', 'text', (c) => c.notNull())
        .addColumn('module', 'text', (c) => c.notNull())
        .addColumn('scope', 'text', (c) => c.notNull())
        .addColumn('change_key', 'text', (c) => c.notNull())
        .addColumn('subject', 'text')
        .addColumn('data', 'text')
        .addColumn('import_id', 'bigint')
        .addColumn('object_type', 'text')
        .addColumn('object_key', 'text')
        .addColumn('recorded_at', 'bigint', (c) => c.notNull())
        .execute();
    },
    async down(db: Kysely<any>) {
      if (dialect === 'postgres') await db.schema.dropTable('change_staged').execute();
    },
  };
}
