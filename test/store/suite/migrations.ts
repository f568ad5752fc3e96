import { sql, type Kysely } from 'kysely';
import { describe, expect, it } from 'vitest';
import type { Database } from '../../../src/store/database.js';
import { SourceRepository } from '../../../src/replication/store/sources.js';
import type { StoreContext } from '../conformance.js';

const MIGRATIONS = ['001_sources_registry', '002_sync_attempts', '003_source_match_key', '004_source_name_nocase', '005_webhook_deliveries', '006_github_imports', '007_change_feeds', '008_storage_shards', '009_registry_next_run', '010_shard_endpoints', '011_registry_verify_index', '012_feed_secrets', '013_import_unfinished_runs', '014_import_retry_at', '015_import_attachment_fetch_url', '016_import_progress', '017_change_staged', '018_housekeeping', '019_lfs', '020_import_list_columns', '021_import_repository_id', '022_import_secondary_limited', '023_import_refreshes', '024_activity'];

async function executedMigrations(db: Kysely<any>): Promise<string[]> {
  const { rows } = await sql<{ name: string }>`select name from kysely_migration order by name`.execute(db);
  return rows.map((row) => row.name);
}

async function closeAll(databases: Database[]): Promise<void> {
  await Promise.all(databases.map((database) => database.close()));
}

export function describeMigrations(ctx: StoreContext): void {
  describe('migrations', () => {
    it('reports its dialect and has run every migration once', async () => {
      expect(ctx.database.dialect).toBe(ctx.backend.name);
      expect(await executedMigrations(ctx.database.db)).toEqual(MIGRATIONS);
    });

    it('are idempotent: opening a migrated database again changes nothing and keeps the data', async () => {
      await ctx.add('kept');
      for (let i = 0; i < 2; i++) {
        const again = await ctx.target.open();
        try {
          expect(await executedMigrations(again.db)).toEqual(MIGRATIONS);
          expect((await new SourceRepository(again).get('kept'))?.name).toBe('kept');
        } finally {
          await again.close();
        }
      }
    });

    it('are safe when several connections open a fresh database at once', async () => {
      const target = await ctx.backend.fresh();
      const opened: Database[] = [];
      try {
        const results = await Promise.allSettled([target.open(), target.open(), target.open(), target.open()]);
        for (const result of results) if (result.status === 'fulfilled') opened.push(result.value);
        const failures = results.filter((r): r is PromiseRejectedResult => r.status === 'rejected');
        expect(failures.map((f) => String(f.reason))).toEqual([]);
        expect(await executedMigrations(opened[0]!.db)).toEqual(MIGRATIONS);
        // Every connection sees the same, usable tables.
        const created = await Promise.all(
          opened.map((database, i) => new SourceRepository(database).create({ name: `c${i}`, url: `https://h/c${i}.git` })),
        );
        expect(new Set(created.map((s) => s.id)).size).toBe(opened.length);
        expect(await new SourceRepository(opened[1]!).count()).toBe(opened.length);
      } finally {
        await closeAll(opened);
        await target.dispose();
      }
    });

    it('close() is idempotent', async () => {
      const again = await ctx.target.open();
      await again.close();
      await again.close();
    });
  });
}
