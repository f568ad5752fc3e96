import { removeStaleDownloads } from '../egress/download.js';
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
    });
    return {
      api: importer,
      jobs: importer.jobs,
      routes: (server, context) => importer.routes(server, context),
      start: () => {
        // What a download killed with its process left (a live one writes all the time, and gives up after its timeout).
        void removeStaleDownloads(importFilesDir(config.dataDir), 2 * FILE_DOWNLOAD_TIMEOUT_MS).catch(() => undefined);
        importer.start();
      },
      stop: () => importer.stop(),
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
