import { sql, type Kysely, type Migration } from 'kysely';

/** The sync interval a source without one of its own had when this migration ran (the setting's default). */
const DEFAULT_INTERVAL_MS = 3_600_000;

/**
 * `registry.next_run_at`: when the scheduler is next to look at the row (ms;
 * null: never on its own, e.g. a disabled source or a failure that waits
 * for a request). Every write that changes what is due sets it (see
 * replication/store/registry.ts), and the scheduler claims due rows by it through its
 * index, so a tick costs the rows due, not the fleet. Existing rows get the
 * time their old conditions implied (a synced row its last sync plus its
 * interval, the default one taken as 1 hour).
 */
export function registryNextRun(): Migration {
  return {
    async up(db: Kysely<any>) {
      await db.schema.alterTable('registry').addColumn('next_run_at', 'bigint').execute();
      await sql`update registry set next_run_at = case
          when (select s.enabled from sources s where s.id = registry.source_id) = 0 then null
          when state in ('pending', 'started') then 0
          when state = 'failed' then next_retry_at
          else coalesce(last_synced_at, 0) + coalesce((select s.interval_ms from sources s where s.id = registry.source_id), ${sql.lit(DEFAULT_INTERVAL_MS)})
        end`.execute(db);
      // (next_run_at, source_id): the claim's order, read off the index.
      await db.schema.createIndex('registry_next_run_idx').on('registry').columns(['next_run_at', 'source_id']).execute();
    },
    async down(db: Kysely<any>) {
      await db.schema.dropIndex('registry_next_run_idx').execute();
      await db.schema.alterTable('registry').dropColumn('next_run_at').execute();
    },
  };
}
