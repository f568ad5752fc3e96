import type { SettingValues } from '../config/setting.js';
import type { Later, ModuleDefinition, ModuleServices } from '../module/definition.js';
import type { ReplicationApi } from '../replication/api.js';
import type { ClusterApi } from './api.js';
import { clusterCommands } from './commands.js';
import { Cluster } from './module.js';
import { clusterSettings } from './settings.js';

/** What the cluster needs: the sources it places and moves (opened after it: replication needs the placement). */
export interface ClusterNeeds {
  replication: Later<ReplicationApi>;
}

/** Distributed mode: shards, placement, moves, a worker's membership and forwarded reads; `forgesync shard …`. */
export const clusterDefinition = {
  name: 'cluster',
  settings: clusterSettings,
  open(services: ModuleServices, settings: SettingValues<typeof clusterSettings>, needs: ClusterNeeds) {
    const cluster = new Cluster({ database: services.database, config: services.config, settings, logger: services.logger, metrics: services.metrics, replication: needs.replication });
    return { api: cluster, stop: () => cluster.stop() };
  },
  commands: clusterCommands,
} satisfies ModuleDefinition<'cluster', typeof clusterSettings, ClusterNeeds, ClusterApi>;
