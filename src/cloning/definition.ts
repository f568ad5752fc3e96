import { Command } from 'commander';
import { mirrorPathFor } from '../git/mirror.js';
import { hasServedView, servedViewOf } from '../git/served-view.js';
import type { SettingValues } from '../config/setting.js';
import type { ModuleDefinition, ModuleServices } from '../module/definition.js';
import type { ReplicationApi } from '../replication/api.js';
import type { ShardReads } from '../cluster/api.js';
import type { CloningApi } from './api.js';
import type { LfsApi } from '../lfs/api.js';
import type { ForgesyncServer } from '../server/app.js';
import type { RouteContext } from '../server/module-routes.js';
import { LazyPackCache } from './pack-cache/lazy.js';
import { cloningSettings } from './settings.js';
import { PACK_GENERATION_TIMEOUT_MS, uploadPackArgv } from './upload-pack.js';

/** What serving clones needs: the sources and where their mirrors are. */
export interface CloningNeeds {
  sources: ReplicationApi;
  /** Distributed mode: where a source's files are (a worker of its shard serves its clones). */
  shardFiles: ShardReads | undefined;
  /** Git LFS under `/git/<name>.git/info/lfs/`, answered by the lfs module behind this module's authentication. */
  lfs?: LfsApi;
}

/** Cloning from forgesync: every source served over Git's smart HTTP under `/git/`. */
export const cloningDefinition = {
  name: 'cloning',
  settings: cloningSettings,
  open(services: ModuleServices, settings: SettingValues<typeof cloningSettings>, needs: CloningNeeds) {
    const { runner, config } = services;
    // Opened by the first routes registered (a serving process only), shared by the public and the shard routes.
    const packCache = new LazyPackCache(
      {
        dataDir: config.dataDir,
        maxBytes: settings.packCacheMaxBytes,
        ttlMs: settings.packCacheTtlMs,
        generationTimeoutMs: PACK_GENERATION_TIMEOUT_MS,
        responseCommand: { argvFor: uploadPackArgv },
      },
      services,
    );
    /** The source's mirror, when there is such a source and it has been cloned. */
    const mirrorOf = async (name: string): Promise<string | undefined> => {
      const source = await needs.sources.findSource(name);
      if (!source) return undefined;
      // Served from the mirror's view: its refs move all at once (see git/served-view.ts).
      const mirror = mirrorPathFor(config.mirrorsDir, source, source.url);
      return hasServedView(mirror) ? servedViewOf(mirror) : undefined;
    };
    const register = async (server: ForgesyncServer, context: RouteContext, shardFiles: ShardReads | undefined) => {
      // Loaded only by a serving process.
      const { gitRoutes } = await import('./http/routes.js');
      const cache = await packCache.open();
      await server.register(gitRoutes({ tokens: context.tokens, runner, mirrorOf, shardFiles, packObjects: cache?.hook, responses: cache?.responses, lfs: needs.lfs }));
    };
    return {
      api: {} as CloningApi,
      routes: (server: ForgesyncServer, context: RouteContext) => register(server, context, needs.shardFiles),
      // A worker serves its own mirrors to api processes, never forwarding further.
      shardRoutes: (server: ForgesyncServer, context: RouteContext) => register(server, context, undefined),
      stop: () => packCache.close(),
    };
  },
  commands: (): Command[] => [],
} satisfies ModuleDefinition<'cloning', typeof cloningSettings, CloningNeeds, CloningApi>;
