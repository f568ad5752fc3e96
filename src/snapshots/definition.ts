import type { SettingValues } from '../config/setting.js';
import type { ShardReads } from '../cluster/api.js';
import type { ModuleDefinition, ModuleServices } from '../module/definition.js';
import type { ReplicationApi } from '../replication/api.js';
import type { SnapshotsApi } from './api.js';
import { snapshotCommands } from './commands.js';
import { Snapshots } from './service.js';
import { snapshotSettings } from './settings.js';

/** What snapshots need of other modules: the sources and their syncs, and in distributed mode where a source's files are. */
export interface SnapshotsNeeds {
  sources: ReplicationApi;
  shardFiles: ShardReads | undefined;
}

/** Snapshots: held per-commit views of sources, reads without materialising, `forgesync snapshot …` and `forgesync show`. */
export const snapshotsDefinition = {
  name: 'snapshots',
  settings: snapshotSettings,
  open(services: ModuleServices, settings: SettingValues<typeof snapshotSettings>, needs: SnapshotsNeeds) {
    const { config, credentials } = services;
    const { sources, shardFiles } = needs;
    const snapshots = new Snapshots({
      root: config.snapshotsDir,
      mirrorsDir: config.mirrorsDir,
      runner: services.runner,
      leases: services.leases,
      logger: services.logger,
      leaseTtlMs: config.leaseTtlMs,
      maxCount: settings.snapshotMaxCount,
      maxBytes: settings.snapshotMaxBytes,
      defaultHoldMs: settings.snapshotHoldMs,
      apiMaxHoldMs: settings.snapshotApiMaxHoldMs,
      getSource: (name) => sources.getSource(name),
      sync: (name, timeoutMs) => sources.sync(name, { trigger: 'library', timeoutMs }),
      tokenOf: async (source) => (source.credentialRef ? await credentials.tokenFor(source.credentialRef, source.url) : undefined),
      ...(shardFiles ? { shardFiles } : {}),
    });
    // A removed mirror's long-lived readers let go of it.
    sources.onMirrorRemoved((path) => snapshots.objects.forget(path));
    return {
      api: snapshots,
      routes: (server, context) => snapshots.routes(server, context),
      shardRoutes: (server, context) => snapshots.shardRoutes(server, context),
      stop: () => snapshots.stop(),
    };
  },
  commands: snapshotCommands,
} satisfies ModuleDefinition<'snapshots', typeof snapshotSettings, SnapshotsNeeds, SnapshotsApi>;
