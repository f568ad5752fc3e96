import { join } from 'node:path';
import type { SettingValues } from '../config/setting.js';
import type { ModuleDefinition, ModuleServices } from '../module/definition.js';
import type { ReplicationApi } from '../replication/api.js';
import type { LfsApi } from './api.js';
import { lfsCommands } from './commands.js';
import { lfsMetrics } from './metrics.js';
import { ObjectFiles } from './files.js';
import { Lfs } from './module.js';
import { LfsReplicator } from './replicate.js';
import { lfsSettings } from './settings.js';
import { LfsObjectRepository } from './store/objects.js';

/** What Git LFS needs: the sources, whose syncs it follows. */
export interface LfsNeeds {
  sources: ReplicationApi;
}

/**
 * The directory of this process's LFS objects: `<dataDir>/lfs/objects`. In
 * distributed mode each worker's data directory is its shard's, so the
 * objects of a shard's sources are on that shard (and count in its bytes).
 */
export function lfsObjectsDir(dataDir: string): string {
  return join(dataDir, 'lfs', 'objects');
}

/**
 * Git LFS: the objects of every source's LFS pointers replicated after each
 * of its syncs (a follower of replication's syncs, under the source's
 * lease), stored once by content and shared; served to git-lfs clients
 * through the cloning module's `/git/` route; `forgesync lfs …`.
 */
export const lfsDefinition = {
  name: 'lfs',
  settings: lfsSettings,
  open(services: ModuleServices, settings: SettingValues<typeof lfsSettings>, needs: LfsNeeds) {
    const objects = new LfsObjectRepository(services.database);
    const files = new ObjectFiles(lfsObjectsDir(services.config.dataDir));
    const replicator = new LfsReplicator({ runner: services.runner, egress: services.egress, credentials: services.credentials, objects, files, logger: services.logger, metrics: lfsMetrics(services.metrics), settings });
    const api = new Lfs({ sources: needs.sources, objects, files });
    const unfollow = needs.sources.followSyncs(replicator);
    // `status --json` shows each source's `lfs: { objects, bytes, missing }`.
    const unreport = needs.sources.addStatusSection({ name: 'lfs', describe: (sources) => api.summaries(sources.map((source) => source.id)) });
    return {
      api: api as LfsApi,
      stop: async () => {
        unfollow();
        unreport();
      },
    };
  },
  commands: lfsCommands,
} satisfies ModuleDefinition<'lfs', typeof lfsSettings, LfsNeeds, LfsApi>;
