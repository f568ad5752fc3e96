import { pickSettings, type SettingGroup, type SettingValues } from '../config/setting.js';
import type { ActivityApi } from '../activity/api.js';
import type { CloningApi } from '../cloning/api.js';
import type { ClusterApi } from '../cluster/api.js';
import type { FeedsApi } from '../feeds/api.js';
import type { ImporterApi } from '../importer/api.js';
import type { Kernel } from '../kernel/kernel.js';
import type { LfsApi } from '../lfs/api.js';
import type { ModuleDefinition, ModuleServices, OpenedModule } from '../module/definition.js';
import type { ReplicationApi } from '../replication/api.js';
import type { SnapshotsApi } from '../snapshots/api.js';
import { activityDefinition } from '../activity/definition.js';
import { cloningDefinition } from '../cloning/definition.js';
import { clusterDefinition } from '../cluster/definition.js';
import { feedsDefinition } from '../feeds/definition.js';
import { importerDefinition } from '../importer/definition.js';
import { lfsDefinition } from '../lfs/definition.js';
import { replicationDefinition } from '../replication/definition.js';
import { snapshotsDefinition } from '../snapshots/definition.js';
import type { ForgesyncConfig } from './config.js';

/** Every module's API, by module name: what the library, the CLI, the server and tests use. */
export interface ModuleApis {
  readonly cluster: ClusterApi;
  readonly replication: ReplicationApi;
  readonly snapshots: SnapshotsApi;
  readonly importer: ImporterApi;
  readonly feeds: FeedsApi;
  readonly lfs: LfsApi;
  readonly cloning: CloningApi;
  readonly activity: ActivityApi;
}

/** A module as opened, with its name and dashboard pages (the kernel's view, and what the server serves of it). */
export type NamedModule = OpenedModule<unknown> & { readonly name: string; readonly dashboardPages: readonly string[] };

/**
 * Opens every module on the kernel, each with the APIs it declared it
 * needs, in an order where each need is open before it is given — except
 * the cluster's need of replication, which is the one cycle (replication
 * asks the cluster where to place a source; the cluster moves sources), and
 * is therefore a `Later` need, resolved when used. Each module is added to
 * the kernel as soon as it is open, so a failure further on closes those
 * opened before it.
 */
export async function composeModules(kernel: Kernel, services: ModuleServices, config: ForgesyncConfig): Promise<{ apis: ModuleApis; opened: NamedModule[] }> {
  const opened: NamedModule[] = [];
  async function open<S extends SettingGroup, N, A>(definition: ModuleDefinition<string, S, N, A>, needs: N): Promise<A> {
    const settings = pickSettings(definition.settings, config as unknown as SettingValues<S>);
    const module = { name: definition.name, dashboardPages: definition.dashboardPages ?? [], ...(await definition.open(services, settings, needs)) };
    kernel.use(module);
    opened.push(module);
    return module.api;
  }
  let replicationApi: ReplicationApi | undefined;
  const cluster = await open(clusterDefinition, { replication: () => replicationApi ?? notOpenYet('replication') });
  const replication = (replicationApi = await open(replicationDefinition, { placement: cluster.placement }));
  const snapshots = await open(snapshotsDefinition, { sources: replication, shardFiles: cluster.shardReads });
  const importer = await open(importerDefinition, { sources: replication, placement: cluster.placement, shardFiles: cluster.shardReads });
  const feeds = await open(feedsDefinition, {});
  const lfs = await open(lfsDefinition, { sources: replication });
  const cloning = await open(cloningDefinition, { sources: replication, shardFiles: cluster.shardReads, lfs });
  const activity = await open(activityDefinition, { sources: replication });
  return { apis: { cluster, replication, snapshots, importer, feeds, lfs, cloning, activity }, opened };
}

function notOpenYet(name: string): never {
  throw new Error(`the ${name} module was used before it was opened: a Later need may only be used once every module is open`);
}
