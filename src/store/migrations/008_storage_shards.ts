import type { Kysely, Migration } from 'kysely';
import type { StoreDialect } from '../database.js';

/**
 * Storage shards and where each source's mirror lives (cluster/store/shards.ts
 * writes them).
 *
 * - `shards`: one row per storage root a worker owns (`FORGESYNC_SHARD`):
 *   `state` is `active` or `draining` as set (`down` is read from
 *   `last_seen_at`, the worker's heartbeat), `node` the worker's host and
 *   pid, `data_dir` its storage root, `weight` its share of new sources,
 *   `bytes` what its mirrors take (reported with the heartbeat).
 * - `sources.shard_id`: the shard holding the source's mirror, null until one
 *   is placed (no shard was active when it was added); chosen once, then only
 *   moved on purpose. `placement_epoch` counts the moves: a write for a
 *   source carries the epoch it was placed under, so a worker that still
 *   believes it owns a moved source cannot write. `move_to`: the shard it is
 *   moving to (its workers sync it there, then flip `shard_id`), or null.
 */
export function storageShards(dialect: StoreDialect): Migration {
  const big = dialect === 'postgres' ? 'bigint' : 'integer';
  return {
    async up(db: Kysely<any>) {
      await db.schema
        .createTable('shards')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('state', 'text', (c) => c.notNull().defaultTo('active'))
        .addColumn('node', 'text', (c) => c.notNull())
        .addColumn('data_dir', 'text', (c) => c.notNull())
        .addColumn('weight', 'real', (c) => c.notNull().defaultTo(1))
        .addColumn('bytes', big, (c) => c.notNull().defaultTo(0))
        .addColumn('registered_at', big, (c) => c.notNull())
        .addColumn('last_seen_at', big, (c) => c.notNull())
        .execute();
      await db.schema.alterTable('sources').addColumn('shard_id', 'text').execute();
      await db.schema.alterTable('sources').addColumn('placement_epoch', 'integer', (c) => c.notNull().defaultTo(0)).execute();
      await db.schema.alterTable('sources').addColumn('move_to', 'text').execute();
      await db.schema.createIndex('sources_shard_idx').on('sources').column('shard_id').execute();
    },
    async down(db: Kysely<any>) {
      await db.schema.dropIndex('sources_shard_idx').execute();
      await db.schema.alterTable('sources').dropColumn('move_to').execute();
      await db.schema.alterTable('sources').dropColumn('placement_epoch').execute();
      await db.schema.alterTable('sources').dropColumn('shard_id').execute();
      await db.schema.dropTable('shards').execute();
    },
  };
}
