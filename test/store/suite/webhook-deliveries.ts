import { Migrator, sql } from 'kysely';
import { beforeEach, describe, expect, it } from 'vitest';
import type { Database } from '../../../src/store/database.js';
import { migrationProvider } from '../../../src/store/migrations/index.js';
import { DELIVERY_PRUNE_EVERY_MS, DELIVERY_PRUNE_MARGIN_MS, WebhookDeliveryRepository } from '../../../src/replication/store/webhook-deliveries.js';
import type { StoreContext } from '../conformance.js';

const T0 = Date.UTC(2025, 0, 1);
const at = (ms: number) => new Date(T0 + ms);
const MINUTE = 60_000;

async function rows(database: Database) {
  const { rows } = await sql<{ provider: string; delivery_id: string; received_at: number; expires_at: number }>`
    select provider, delivery_id, received_at, expires_at from webhook_deliveries order by provider, delivery_id`.execute(database.db);
  return rows.map((row) => ({ ...row, received_at: Number(row.received_at), expires_at: Number(row.expires_at) }));
}

export function describeWebhookDeliveries(ctx: StoreContext): void {
  describe('webhook deliveries', () => {
    let deliveries: WebhookDeliveryRepository;
    beforeEach(async () => {
      await ctx.database.db.deleteFrom('webhook_deliveries').execute();
      deliveries = new WebhookDeliveryRepository(ctx.database);
    });

    it('the first claim of an id wins and is stored; the same id again is a duplicate until it expires; ids are per provider', async () => {
      const claim = await deliveries.claim('generic', 'msg_1', at(5 * MINUTE), at(0));
      expect(claim).toEqual({ provider: 'generic', id: 'msg_1', receivedAt: T0 });
      expect(await deliveries.claim('generic', 'msg_1', at(9 * MINUTE), at(MINUTE))).toBeNull();
      expect(await deliveries.claim('generic', 'msg_1', at(9 * MINUTE), at(5 * MINUTE))).toBeNull(); // expires_at is not before now
      expect(await deliveries.claim('other', 'msg_1', at(5 * MINUTE), at(0))).not.toBeNull();
      expect(await rows(ctx.database)).toEqual([
        { provider: 'generic', delivery_id: 'msg_1', received_at: T0, expires_at: T0 + 5 * MINUTE },
        { provider: 'other', delivery_id: 'msg_1', received_at: T0, expires_at: T0 + 5 * MINUTE },
      ]);
    });

    it('an expired claim is taken over by a new delivery of the id (a retry after the window)', async () => {
      await deliveries.claim('generic', 'msg_2', at(5 * MINUTE), at(0));
      const later = await deliveries.claim('generic', 'msg_2', at(20 * MINUTE), at(15 * MINUTE));
      expect(later).toEqual({ provider: 'generic', id: 'msg_2', receivedAt: T0 + 15 * MINUTE });
      expect(await rows(ctx.database)).toEqual([{ provider: 'generic', delivery_id: 'msg_2', received_at: T0 + 15 * MINUTE, expires_at: T0 + 20 * MINUTE }]);
      expect(await deliveries.claim('generic', 'msg_2', at(20 * MINUTE), at(16 * MINUTE))).toBeNull();
    });

    it('a released claim frees the id; releasing a claim that was taken over leaves the new one', async () => {
      const claim = (await deliveries.claim('generic', 'msg_3', at(5 * MINUTE), at(0)))!;
      await deliveries.release(claim);
      expect(await rows(ctx.database)).toEqual([]);
      const again = await deliveries.claim('generic', 'msg_3', at(5 * MINUTE), at(MINUTE));
      expect(again).not.toBeNull();

      const stale = (await deliveries.claim('generic', 'msg_4', at(5 * MINUTE), at(0)))!;
      const current = (await deliveries.claim('generic', 'msg_4', at(30 * MINUTE), at(25 * MINUTE)))!;
      await deliveries.release(stale);
      expect((await rows(ctx.database)).find((row) => row.delivery_id === 'msg_4')).toMatchObject({ received_at: current.receivedAt });
    });

    it(`prune() deletes claims expired more than ${DELIVERY_PRUNE_MARGIN_MS / MINUTE} minutes ago, and pruneIfDue() runs it once per ${DELIVERY_PRUNE_EVERY_MS / 1000} s`, async () => {
      await deliveries.claim('generic', 'old', at(5 * MINUTE), at(0));
      await deliveries.claim('generic', 'recent', at(20 * MINUTE), at(15 * MINUTE));
      await deliveries.claim('generic', 'live', at(40 * MINUTE), at(35 * MINUTE));
      const now = at(5 * MINUTE + DELIVERY_PRUNE_MARGIN_MS + 1);
      expect(await deliveries.prune(now)).toBe(1);
      expect((await rows(ctx.database)).map((row) => row.delivery_id)).toEqual(['live', 'recent']);

      const fresh = new WebhookDeliveryRepository(ctx.database);
      const late = at(20 * MINUTE + DELIVERY_PRUNE_MARGIN_MS + 1);
      expect(await fresh.pruneIfDue(late)).toBe(1); // the first call prunes
      await deliveries.claim('generic', 'expired-meanwhile', at(MINUTE), at(0));
      expect(await fresh.pruneIfDue(new Date(late.getTime() + DELIVERY_PRUNE_EVERY_MS - 1))).toBeNull();
      expect(await fresh.pruneIfDue(new Date(late.getTime() + DELIVERY_PRUNE_EVERY_MS))).toBe(1);
      expect((await rows(ctx.database)).map((row) => row.delivery_id)).toEqual(['live']);
    });

    it('connections claiming one id at once ("processes" sharing the registry): exactly one wins', async () => {
      const others = [await ctx.target.open(), await ctx.target.open()];
      try {
        const repositories = [deliveries, ...others.map((database) => new WebhookDeliveryRepository(database))];
        for (let round = 0; round < 5; round++) {
          const id = `race_${round}`;
          const claims = await Promise.all(
            Array.from({ length: 12 }, (_, i) => repositories[i % repositories.length]!.claim('generic', id, at(5 * MINUTE), at(0))),
          );
          expect(claims.filter(Boolean)).toHaveLength(1);
        }
        expect(await rows(others[0]!)).toHaveLength(5);
      } finally {
        await Promise.all(others.map((database) => database.close()));
      }
    });

    it('migration 005 goes down (dropping the table) and up again when the database is next opened', async () => {
      const target = await ctx.backend.fresh();
      let database = await target.open();
      try {
        await new WebhookDeliveryRepository(database).claim('generic', 'before', at(MINUTE), at(0));
        const schema = ctx.backend.name === 'postgres' ? (await sql<{ s: string }>`select current_schema() as s`.execute(database.db)).rows[0]!.s : undefined;
        const migrator = new Migrator({ db: database.db, provider: migrationProvider(database.dialect), migrationTableSchema: schema });
        const down = await migrator.migrateTo('004_source_name_nocase');
        expect(down.error).toBeUndefined();
        expect(down.results?.map((r) => `${r.direction} ${r.migrationName} ${r.status}`)).toEqual(['Down 024_activity Success', 'Down 023_import_refreshes Success', 'Down 022_import_secondary_limited Success', 'Down 021_import_repository_id Success', 'Down 020_import_list_columns Success', 'Down 019_lfs Success', 'Down 018_housekeeping Success', 'Down 017_change_staged Success', 'Down 016_import_progress Success', 'Down 015_import_attachment_fetch_url Success', 'Down 014_import_retry_at Success', 'Down 013_import_unfinished_runs Success', 'Down 012_feed_secrets Success', 'Down 011_registry_verify_index Success', 'Down 010_shard_endpoints Success', 'Down 009_registry_next_run Success', 'Down 008_storage_shards Success', 'Down 007_change_feeds Success', 'Down 006_github_imports Success', 'Down 005_webhook_deliveries Success']);
        await expect(rows(database)).rejects.toThrow(/webhook_deliveries/);
        await database.close();

        database = await target.open();
        expect(await rows(database)).toEqual([]);
        expect(await new WebhookDeliveryRepository(database).claim('generic', 'after', at(MINUTE), at(0))).not.toBeNull();
      } finally {
        await database.close();
        await target.dispose();
      }
    });

    it('the table has the (provider, delivery_id) key, so no second row of an id can be written', async () => {
      const row = { provider: 'generic', delivery_id: 'dup', received_at: T0, expires_at: T0 };
      await ctx.database.db.insertInto('webhook_deliveries').values(row).execute();
      await expect(ctx.database.db.insertInto('webhook_deliveries').values(row).execute()).rejects.toThrow(/unique|duplicate/i);
    });
  });
}
