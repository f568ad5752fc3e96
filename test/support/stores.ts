import type { Forgesync } from '../../src/app/forgesync.js';
import { ShardRepository } from '../../src/cluster/store/shards.js';
import { FeedRepository } from '../../src/feeds/store/feeds.js';
import { ImportRepository } from '../../src/importer/store/imports.js';
import { RegistryRepository } from '../../src/replication/store/registry.js';
import { SourceRepository } from '../../src/replication/store/sources.js';
import { HoldFiles } from '../../src/snapshots/holds.js';

/*
 * Tests that read or write what a module stores, beside its API (a row put
 * into a state, a request counted, a hold looked up), do it through views of
 * their own over the app's database and directories. Repositories keep no
 * state of their own, so a test's instance sees exactly the rows the app's
 * modules see, without reaching into the modules.
 */

/** Replication's tables, timed as the app's replication module times them (src/replication/module.ts). */
export function replicationStores(app: Forgesync): { sources: SourceRepository; registry: RegistryRepository } {
  const database = app.kernel.database;
  return {
    sources: new SourceRepository(database),
    // As the module: a started row is looked at again, and a lost job swept, after two lease ttls.
    registry: new RegistryRepository(database, { defaultIntervalMs: app.config.syncIntervalMs, startedRecheckMs: 2 * app.config.leaseTtlMs }),
  };
}

/** The storage shards, a worker called down as the cluster module calls it (after two lease ttls). */
export function shardStore(app: Forgesync): ShardRepository {
  return new ShardRepository(app.kernel.database.db, 2 * app.config.leaseTtlMs);
}

/** The feeds' rows. */
export function feedStore(app: Forgesync): FeedRepository {
  return new FeedRepository(app.kernel.database.db);
}

/** The imports' rows. */
export function importStore(app: Forgesync): ImportRepository {
  return new ImportRepository(app.kernel.database);
}

/** The snapshot holds on this machine (hold files under the snapshots directory, which the app's snapshots share). */
export function snapshotHolds(app: Forgesync): HoldFiles {
  return new HoldFiles(app.config.snapshotsDir);
}
