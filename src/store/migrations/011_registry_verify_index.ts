import type { Kysely, Migration } from 'kysely';

/**
 * An index on `registry (state, verified_at)`: the scheduler's pick of
 * synced mirrors due for re-verification (oldest first, see
 * replication/store/registry-queries.ts dueForVerification) reads the rows it takes
 * off the index instead of sorting every synced row, so it costs the rows
 * picked, not the fleet.
 */
export function registryVerifyIndex(): Migration {
  return {
    async up(db: Kysely<any>) {
      await db.schema.createIndex('registry_verify_idx').on('registry').columns(['state', 'verified_at']).execute();
    },
    async down(db: Kysely<any>) {
      await db.schema.dropIndex('registry_verify_idx').execute();
    },
  };
}
