import type { SettingValues } from '../config/setting.js';
import type { ModuleDefinition, ModuleServices } from '../module/definition.js';
import type { ReplicationApi } from '../replication/api.js';
import { Activity } from './activity.js';
import type { ActivityApi } from './api.js';
import { activitySettings } from './settings.js';

/** What the activity module needs of other modules: the failing sources, and requesting their syncs. */
export interface ActivityNeeds {
  sources: Pick<ReplicationApi, 'listSources' | 'requestSyncByIds'>;
}

/**
 * Activity over time: a rollup of this process's metrics in the database
 * (per minute for a day, per hour for a month), the dashboard's charts of
 * it, and the failing sources grouped by error. Every process that serves
 * HTTP, runs jobs or runs the scheduler samples its own metrics, so the
 * counts of a cluster's processes add up in the same rows.
 */
export const activityDefinition = {
  name: 'activity',
  settings: activitySettings,
  dashboardPages: ['activity.js'],
  open(services: ModuleServices, settings: SettingValues<typeof activitySettings>, needs: ActivityNeeds) {
    const activity = new Activity({
      database: services.database,
      metrics: services.metrics,
      logger: services.logger,
      settings,
      sources: needs.sources,
      runsJobs: () => services.runsJobs(),
    });
    activity.startSampling();
    return {
      api: activity,
      routes: async (server, context) => {
        const { activityRoutes } = await import('./http/routes.js');
        await server.register(activityRoutes(activity, context));
        activity.serving();
      },
      start: () => activity.serving(),
      stop: () => activity.stop(),
    };
  },
  commands: () => [],
} satisfies ModuleDefinition<'activity', typeof activitySettings, ActivityNeeds, ActivityApi>;
