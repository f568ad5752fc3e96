import type { Migration, MigrationProvider } from 'kysely';
import type { StoreDialect } from '../database.js';
import { sourcesRegistry } from './001_sources_registry.js';
import { syncAttempts } from './002_sync_attempts.js';
import { sourceMatchKey } from './003_source_match_key.js';
import { sourceNameNocase } from './004_source_name_nocase.js';
import { webhookDeliveries } from './005_webhook_deliveries.js';
import { githubImports } from './006_github_imports.js';
import { changeFeeds } from './007_change_feeds.js';
import { storageShards } from './008_storage_shards.js';
import { registryNextRun } from './009_registry_next_run.js';
import { shardEndpoints } from './010_shard_endpoints.js';
import { registryVerifyIndex } from './011_registry_verify_index.js';
import { feedSecrets } from './012_feed_secrets.js';
import { importUnfinishedRuns } from './013_import_unfinished_runs.js';
import { importRetryAt } from './014_import_retry_at.js';
import { importAttachmentFetchUrl } from './015_import_attachment_fetch_url.js';
import { importProgress } from './016_import_progress.js';
import { changeStaged } from './017_change_staged.js';
import { housekeeping } from './018_housekeeping.js';
import { lfs } from './019_lfs.js';
import { importListColumns } from './020_import_list_columns.js';
import { importRepositoryId } from './021_import_repository_id.js';
import { importSecondaryLimited } from './022_import_secondary_limited.js';
import { importRefreshes } from './023_import_refreshes.js';
import { activity } from './024_activity.js';

/**
 * Every migration, by name. Names sort in the order they run; a new
 * migration gets the next number and is added here (no directory scan, so
 * the bundle and the compiled output need no extra files).
 */
export function migrations(dialect: StoreDialect): Record<string, Migration> {
  return {
    '001_sources_registry': sourcesRegistry(dialect),
    '002_sync_attempts': syncAttempts(dialect),
    '003_source_match_key': sourceMatchKey(),
    '004_source_name_nocase': sourceNameNocase(),
    '005_webhook_deliveries': webhookDeliveries(dialect),
    '006_github_imports': githubImports(dialect),
    '007_change_feeds': changeFeeds(dialect),
    '008_storage_shards': storageShards(dialect),
    '009_registry_next_run': registryNextRun(),
    '010_shard_endpoints': shardEndpoints(),
    '011_registry_verify_index': registryVerifyIndex(),
    '012_feed_secrets': feedSecrets(),
    '013_import_unfinished_runs': importUnfinishedRuns(),
    '014_import_retry_at': importRetryAt(dialect),
    '015_import_attachment_fetch_url': importAttachmentFetchUrl(),
    '016_import_progress': importProgress(dialect),
    '017_change_staged': changeStaged(dialect),
    '018_housekeeping': housekeeping(dialect),
    '019_lfs': lfs(dialect),
    '020_import_list_columns': importListColumns(dialect),
    '021_import_repository_id': importRepositoryId(),
    '022_import_secondary_limited': importSecondaryLimited(dialect),
    '023_import_refreshes': importRefreshes(dialect),
    '024_activity': activity(dialect),
  };
}

/** A static Kysely migration provider for `dialect`. */
export function migrationProvider(dialect: StoreDialect): MigrationProvider {
  return { getMigrations: async () => migrations(dialect) };
}
