import { sql, type Kysely, type Migration } from 'kysely';
import type { StoreDialect } from '../database.js';

/**
 * The change log and the feeds that export it (see store/change-log.ts and
 * feeds/store.ts for who writes what).
 *
 * - `change_log`: one row per change, appended in the same transaction as
 *   the write that made it. `seq` comes from `change_head`, whose single row
 *   every appending transaction updates last: the row lock (PostgreSQL) or
 *   the write lock (SQLite) makes numbers follow commit order, with no gaps,
 *   so a reader that has seen `seq` n has seen every change below it.
 *   `scope` is the source's or import's name (what `--sources` matches);
 *   `change_key` orders changes per key. An imported object's change points
 *   at its `import_objects` row instead of copying it (`data` is null then).
 * - `change_head`: `(id = 1, seq)`, the last number handed out.
 * - `feeds`: one row per feed: its sink, scope, cursor (every change at or
 *   below it is acknowledged, waiting in `feed_pending`, or dead), the
 *   requests recorded for it (partial, full, replay) and the last run, all
 *   guarded by the `feed:<name>` lease's fence. `pending_at` is when its
 *   earliest held-back change is due again (what the poller looks at).
 * - `feed_pending`: changes at or below the cursor still to deliver: one that
 *   failed (with its attempts and when to try again) and the later changes of
 *   its key, held back behind it.
 * - `feed_dead_letters`: changes that failed too often, with their last error.
 */
export function changeFeeds(dialect: StoreDialect): Migration {
  const pg = dialect === 'postgres';
  const big = pg ? 'bigint' : 'integer';
  return {
    async up(db: Kysely<any>) {
      await db.schema
        .createTable('change_log')
        .addColumn('seq', big, (c) => c.primaryKey())
        .addColumn('type', 'text', (c) => c.notNull())
        .addColumn('module', 'text', (c) => c.notNull())
        .addColumn('scope', 'text', (c) => c.notNull())
        .addColumn('change_key', 'text', (c) => c.notNull())
        .addColumn('subject', 'text')
        .addColumn('data', 'text')
        .addColumn('import_id', big)
        .addColumn('object_type', 'text')
        .addColumn('object_key', 'text')
        .addColumn('recorded_at', big, (c) => c.notNull())
        .execute();
      // A full sync looks up the latest change of each key it exports.
      await db.schema.createIndex('change_log_key_idx').on('change_log').columns(['change_key', 'seq']).execute();
      await db.schema
        .createTable('change_head')
        .addColumn('id', 'integer', (c) => c.primaryKey())
        .addColumn('seq', big, (c) => c.notNull())
        .execute();
      await db.insertInto('change_head').values({ id: 1, seq: 0 }).execute();

      await db.schema
        .createTable('feeds')
        .addColumn('id', pg ? 'bigserial' : 'integer', (c) => (pg ? c.primaryKey() : c.primaryKey().autoIncrement()))
        .addColumn('name', 'text', (c) => c.notNull().unique())
        .addColumn('sink', 'text', (c) => c.notNull())
        .addColumn('types', 'text')
        .addColumn('sources', 'text')
        .addColumn('secret_env', 'text')
        .addColumn('batch', 'integer', (c) => c.notNull())
        .addColumn('paused', 'integer', (c) => c.notNull().defaultTo(0))
        .addColumn('disabled', 'text')
        .addColumn('cursor', big, (c) => c.notNull())
        .addColumn('fence', big)
        .addColumn('partial_requested', 'integer', (c) => c.notNull().defaultTo(0))
        .addColumn('replay_from', big)
        .addColumn('full_requested_at', big)
        .addColumn('full_started_at', big)
        .addColumn('full_head', big)
        .addColumn('full_chunk', 'text')
        .addColumn('full_done', big, (c) => c.notNull().defaultTo(0))
        .addColumn('skips', big, (c) => c.notNull().defaultTo(0))
        .addColumn('failures', 'integer', (c) => c.notNull().defaultTo(0))
        .addColumn('retry_at', big)
        .addColumn('pending_at', big)
        .addColumn('last_error', 'text')
        .addColumn('delivered', big, (c) => c.notNull().defaultTo(0))
        .addColumn('last_run', 'text')
        .addColumn('created_at', big, (c) => c.notNull())
        .addColumn('updated_at', big, (c) => c.notNull())
        .execute();
      for (const table of ['feed_pending', 'feed_dead_letters']) {
        await db.schema
          .createTable(table)
          .addColumn('feed_id', big, (c) => c.notNull().references('feeds.id').onDelete('cascade'))
          .addColumn('seq', big, (c) => c.notNull())
          .addColumn('change_key', 'text', (c) => c.notNull())
          .addColumn('attempts', 'integer', (c) => c.notNull())
          .addColumn('next_at', big, (c) => c.notNull())
          .addColumn('last_error', 'text')
          .addPrimaryKeyConstraint(`${table}_pkey`, ['feed_id', 'seq'])
          .execute();
      }
      await db.schema.createIndex('feed_pending_key_idx').on('feed_pending').columns(['feed_id', 'change_key', 'seq']).execute();
      if (pg) await sql`analyze change_head`.execute(db);
    },

    async down(db: Kysely<any>) {
      for (const table of ['feed_dead_letters', 'feed_pending', 'feeds', 'change_head', 'change_log']) await db.schema.dropTable(table).execute();
    },
  };
}
