import { removeStaleDownloads } from '../egress/download.js';
import type { ShardReads } from '../cluster/api.js';
import { mirrorPathFor } from '../git/mirror.js';
import { hasServedView, servedViewOf } from '../git/served-view.js';
import type { GitDataSource } from './http/github-api/git-data/source.js';
import { FILE_DOWNLOAD_TIMEOUT_MS } from './stages/object-work.js';
import type { SettingValues } from '../config/setting.js';
import type { ModuleDefinition, ModuleServices } from '../module/definition.js';
import type { ReplicationApi, SourcePlacement } from '../replication/api.js';
import type { ImporterApi } from './api.js';
import { importCommands } from './commands.js';
import { Importer, importFilesDir } from './module.js';
import { importerSettings } from './settings.js';
import type { GitSourceOptions } from './run/sources.js';

/** What the importer needs: the git sources of a repository and its wiki, and where jobs are routed by shard the live workers. */
export interface ImporterNeeds {
  sources: ReplicationApi;
  placement: SourcePlacement;
  /** Distributed mode: where a source's files are (the GitHub-compatible API's git data is read on its shard's worker). */
  shardFiles?: ShardReads | undefined;
}

/** The GitHub importer: imports, their jobs and schedule, the imports API, the GitHub-compatible read API, `forgesync import …`. */
export const importerDefinition = {
  name: 'importer',
  settings: importerSettings,
  dashboardPages: ['imports.js'],
  open(services: ModuleServices, settings: SettingValues<typeof importerSettings>, needs: ImporterNeeds) {
    const { config, changes } = services;
    const { routed } = needs.placement;
    const importer = new Importer({
      ...services,
      policy: services.egress,
      filesDir: importFilesDir(config.dataDir),
      leaseTtlMs: config.leaseTtlMs,
      tickMs: Math.max(config.schedulerTickMs, 1000),
      settings,
      onChanges: () => changes.notify(),
      // Every live worker takes an import's per-object jobs where jobs are routed by shard.
      ...(routed ? { requestingProcesses: async () => (await routed.live()).length } : {}),
      sources: gitSources(needs.sources),
      gitData: gitData(needs, services.runner, config.mirrorsDir),
    });
    // GitHub's deliveries about project data reach the imports of their repository (replication receives them).
    const unfollow = needs.sources.followProjectDeliveries((delivery) => importer.receiveDelivery(delivery));
    return {
      api: importer,
      jobs: importer.jobs,
      routes: (server, context) => importer.routes(server, context),
      shardRoutes: (server, context) => importer.shardRoutes(server, context),
      start: () => {
        // What a download killed with its process left (a live one writes all the time, and gives up after its timeout).
        void removeStaleDownloads(importFilesDir(config.dataDir), 2 * FILE_DOWNLOAD_TIMEOUT_MS).catch(() => undefined);
        importer.start();
      },
      stop: () => {
        unfollow();
        return importer.stop();
      },
    };
  },
  commands: importCommands,
} satisfies ModuleDefinition<'importer', typeof importerSettings, ImporterNeeds, ImporterApi>;

/** An import's repository and wiki as replication's sources. */
function gitSources(replication: ReplicationApi): GitSourceOptions {
  return {
    find: (name) => replication.findSource(name),
    add: async ({ name, url, credential }) => {
      await replication.addSource({ name, url, ...(credential ? { credentialRef: credential } : {}) });
    },
    requestSync: async (name, url) => {
      const source = await replication.getSource(name);
      if (source.url !== url) await replication.updateSource(name, { url });
      else await replication.requestSync(name, { trigger: 'library' });
    },
    sync: async (name) => {
      await replication.sync(name, { trigger: 'library', timeoutMs: 10 * 60_000 }).catch(() => undefined);
    },
    copyMirror: (name, dest) => replication.copyMirror(name, dest),
    status: async (name) => {
      const source = await replication.findSource(name);
      return source ? { name: source.name, state: source.registry.state, lastSyncedAt: source.registry.lastSyncedAt?.toISOString() ?? null } : null;
    },
  };
}

/**
 * The imports' repository mirrors as the GitHub-compatible API reads them:
 * a source's served view (its refs move all at once, as clones see them),
 * undefined before its first sync; in distributed mode, on its shard.
 */
function gitData(needs: ImporterNeeds, runner: GitDataSource['runner'], mirrorsDir: string): GitDataSource {
  return {
    runner,
    mirrorOf: async (name) => {
      const source = await needs.sources.findSource(name);
      if (!source) return undefined;
      const mirror = mirrorPathFor(mirrorsDir, source, source.url);
      return hasServedView(mirror) ? servedViewOf(mirror) : undefined;
    },
    ...(needs.shardFiles ? { shardFiles: needs.shardFiles } : {}),
  };
}
