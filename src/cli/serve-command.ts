import { Command } from 'commander';
import { withForgesync } from './app-context.js';

/** `forgesync serve`: scheduler and workers in the foreground until SIGINT/SIGTERM. */
export function serveCommand(): Command {
  return new Command('serve')
    .description('run the scheduler and sync workers until SIGINT or SIGTERM')
    .action(async (_options: unknown, command: Command) => {
      await withForgesync(
        command,
        async (app) => {
          app.startService();
          app.logger.info(
            { event: 'serve', data_dir: app.config.dataDir, capacity: app.config.maxConcurrentSyncs },
            `forgesync serving from ${app.config.dataDir}`,
          );
          const signal = await new Promise<NodeJS.Signals>((resolve) => {
            process.once('SIGINT', () => resolve('SIGINT'));
            process.once('SIGTERM', () => resolve('SIGTERM'));
          });
          app.logger.info({ event: 'shutdown', signal }, `received ${signal}; stopping`);
          // close() (in withForgesync) stops the scheduler, kills running git and releases leases.
        },
        { logLevel: 'info' },
      );
    });
}
