import type { SettingValues } from '../config/setting.js';
import { localRefs, readRefFiles } from '../git/refs.js';
import type { ModuleDefinition, ModuleServices } from '../module/definition.js';
import type { FeedsApi } from './api.js';
import { feedCommands } from './commands.js';
import { Feeds } from './module.js';
import { feedSettings } from './settings.js';

/**
 * The change feeds: what every module records in the change log, delivered
 * to HTTP endpoints, NATS JetStream and files; `forgesync feed …`. They need
 * no other module: the change log is the kernel's, and they hear of new
 * changes through its signal.
 */
export const feedsDefinition = {
  name: 'feeds',
  settings: feedSettings,
  dashboardPages: ['feeds.js'],
  open(services: ModuleServices, settings: SettingValues<typeof feedSettings>) {
    const { runner } = services;
    const feeds = new Feeds({
      ...services,
      policy: services.egress,
      secrets: services.credentials,
      leaseTtlMs: services.config.leaseTtlMs,
      settings,
      readRefs: async (mirrorPath) => readRefFiles(mirrorPath) ?? (await localRefs(runner, mirrorPath)),
    });
    const stopListening = services.changes.listen(() => feeds.nudge());
    return {
      api: feeds,
      jobs: feeds.jobs,
      routes: (server, context) => feeds.routes(server, context),
      start: () => feeds.start(),
      stop: async () => {
        stopListening();
        await feeds.stop();
      },
    };
  },
  commands: feedCommands,
} satisfies ModuleDefinition<'feeds', typeof feedSettings, Record<string, never>, FeedsApi>;
