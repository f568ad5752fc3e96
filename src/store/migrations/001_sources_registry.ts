import { sql, type Kysely, type Migration } from 'kysely';
import type { StoreDialect } from '../database.js';

/**
 * `sources` and their `registry` rows. Times are epoch milliseconds and
 * booleans 0/1 integers, identical on both dialects; fences are 64-bit
 * integers compared as such.
 */
export function sourcesRegistry(dialect: StoreDialect): Migration {
  const pg = dialect === 'postgres';
  const big = pg ? 'bigint' : 'integer';
  return {
    async up(db: Kysely<any>) {
      await db.schema
        .createTable('sources')
        .addColumn('id', pg ? 'bigserial' : 'integer', (c) => (pg ? c.primaryKey() : c.primaryKey().autoIncrement()))
        .addColumn('name', 'text', (c) => c.notNull().unique())
        .addColumn('url', 'text', (c) => c.notNull())
        .addColumn('credential_ref', 'text')
        .addColumn('interval_ms', big)
        .addColumn('cron', 'text')
        .addColumn('enabled', 'integer', (c) => c.notNull().defaultTo(1))
        .addColumn('created_at', big, (c) => c.notNull())
        .addColumn('updated_at', big, (c) => c.notNull())
        .execute();

      await db.schema
        .createTable('registry')
        .addColumn('source_id', big, (c) => c.primaryKey().references('sources.id').onDelete('cascade'))
        .addColumn('state', 'text', (c) => c.notNull().defaultTo('pending'))
        .addColumn('retry_count', 'integer', (c) => c.notNull().defaultTo(0))
        .addColumn('next_retry_at', big)
        .addColumn('last_attempt_at', big)
        .addColumn('last_synced_at', big)
        .addColumn('last_failure', 'text')
        .addColumn('last_failure_at', big)
        .addColumn('checksum', 'text')
        .addColumn('verification_state', 'text', (c) => c.notNull().defaultTo('unverified'))
        .addColumn('verified_at', big)
        .addColumn('missing_on_primary', 'integer', (c) => c.notNull().defaultTo(0))
        .addColumn('requested_seq', big, (c) => c.notNull().defaultTo(0))
        .addColumn('completed_seq', big, (c) => c.notNull().defaultTo(0))
        .addColumn('target_seq', big, (c) => c.notNull().defaultTo(0))
        .addColumn('fence', big)
        .addColumn('mirror_path', 'text')
        .addColumn('updated_at', big, (c) => c.notNull())
        .addCheckConstraint('registry_state_check', sql`state in ('pending', 'started', 'synced', 'failed')`)
        .addCheckConstraint(
          'registry_verification_state_check',
          sql`verification_state in ('unverified', 'verified', 'mismatch')`,
        )
        .execute();

      await db.schema.createIndex('registry_state_idx').on('registry').columns(['state', 'next_retry_at']).execute();
    },

    async down(db: Kysely<any>) {
      await db.schema.dropTable('registry').execute();
      await db.schema.dropTable('sources').execute();
    },
  };
}
