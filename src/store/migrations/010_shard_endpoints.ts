import type { Kysely, Migration } from 'kysely';

/**
 * `shards.endpoint`: where the shard's worker answers reads that need the
 * files (snapshots, contents), e.g. `http://10.0.0.7:8081`; an api process
 * forwards those reads there (cluster/forward.ts). Null for a worker that
 * runs no internal endpoint (embedded mode, or before its first start).
 */
export function shardEndpoints(): Migration {
  return {
    async up(db: Kysely<any>) {
      await db.schema.alterTable('shards').addColumn('endpoint', 'text').execute();
    },
    async down(db: Kysely<any>) {
      await db.schema.alterTable('shards').dropColumn('endpoint').execute();
    },
  };
}
