import type { Kysely, Migration } from 'kysely';
import type { StoreDialect } from '../database.js';

/**
 * `webhook_deliveries`: the delivery ids a webhook receiver has acted on,
 * kept while a replay of that delivery could still pass its timestamp check,
 * so that every process sharing the registry acts on an id once (see
 * webhook-deliveries.ts). Keyed by (provider, delivery_id): ids are only
 * unique per sender. `expires_at` is indexed for the occasional prune.
 */
export function webhookDeliveries(dialect: StoreDialect): Migration {
  const big = dialect === 'postgres' ? 'bigint' : 'integer';
  return {
    async up(db: Kysely<any>) {
      await db.schema
        .createTable('webhook_deliveries')
        .addColumn('provider', 'text', (c) => c.notNull())
        .addColumn('delivery_id', 'text', (c) => c.notNull())
        .addColumn('received_at', big, (c) => c.notNull())
        .addColumn('expires_at', big, (c) => c.notNull())
        .addPrimaryKeyConstraint('webhook_deliveries_pkey', ['provider', 'delivery_id'])
        .execute();
      await db.schema.createIndex('webhook_deliveries_expires_idx').on('webhook_deliveries').column('expires_at').execute();
    },

    async down(db: Kysely<any>) {
      await db.schema.dropTable('webhook_deliveries').execute();
    },
  };
}
