import type { SettingValues } from '../config/setting.js';
import type { ModuleDefinition, ModuleServices } from '../module/definition.js';
import type { ReplicationApi, SourcePlacement } from './api.js';
import { replicationCommands } from './commands.js';
import { Replication } from './module.js';
import { replicationSettings } from './settings.js';

/** What replication needs of other modules: where sources are placed (the cluster). */
export interface ReplicationNeeds {
  placement: SourcePlacement;
}

/** Replication: sources, mirrors, sync and verification jobs, the scheduler, the sources API and webhooks, `forgesync add|remove|sync|resync|status`. */
export const replicationDefinition = {
  name: 'replication',
  settings: replicationSettings,
  dashboardPages: ['overview.js', 'sources.js'],
  open(services: ModuleServices, settings: SettingValues<typeof replicationSettings>, needs: ReplicationNeeds) {
    const { config, changes, onGitProgress } = services;
    const { routed } = needs.placement;
    const replication = new Replication({
      ...services,
      mirrorsDir: config.mirrorsDir,
      leaseTtlMs: config.leaseTtlMs,
      tickMs: config.schedulerTickMs,
      settings,
      ...(onGitProgress ? { onProgress: onGitProgress } : {}),
      onChanges: () => changes.notify(),
      placeSource: (name) => needs.placement.choose(name),
      // Placement is enforced where jobs are routed by shard; otherwise every source is synced here.
      ...(routed ? { localShard: routed.localShard, liveShards: () => routed.live() } : {}),
    });
    return {
      api: replication,
      jobs: replication.jobs,
      routes: (server, context) => replication.routes(server, context),
      start: () => replication.start(),
      stop: () => replication.stop(),
    };
  },
  commands: replicationCommands,
} satisfies ModuleDefinition<'replication', typeof replicationSettings, ReplicationNeeds, ReplicationApi>;
