import { Command, InvalidArgumentError } from 'commander';
import { buildServer } from '../server/app.js';
import { withForgesync } from './app-context.js';

function parsePort(value: string): string {
  if (!/^\d+$/.test(value) || Number(value) > 65535) throw new InvalidArgumentError('port must be a number from 0 to 65535');
  return value;
}

/**
 * `forgesync serve`: scheduler, sync workers and the HTTP service (API,
 * webhooks, dashboard, metrics) in the foreground until SIGINT/SIGTERM.
 */
export function serveCommand(): Command {
  return new Command('serve')
    .description('run the scheduler, sync workers and HTTP service until SIGINT or SIGTERM')
    .option('--port <port>', 'HTTP port (default: $FORGESYNC_PORT or 8080)', parsePort)
    .option('--host <address>', 'address to bind (default: $FORGESYNC_HOST or 0.0.0.0)')
    .action(async (options: { port?: string; host?: string }, command: Command) => {
      await withForgesync(
        command,
        async (app) => {
          const { config, logger } = app;
          let host = options.host ?? config.host ?? '0.0.0.0';
          if (!config.adminToken && host !== '127.0.0.1' && host !== 'localhost' && host !== '::1') {
            logger.warn(
              { event: 'loopback_only', requested_host: host },
              'no FORGESYNC_ADMIN_TOKEN configured: the API is unauthenticated, so forgesync binds to 127.0.0.1 only',
            );
            host = '127.0.0.1';
          }
          const server = await buildServer(app, { tokens: { admin: config.adminToken, read: config.readToken } });
          const address = await server.listen({ port: Number(options.port ?? config.port), host });
          await app.startService();
          logger.info(
            { event: 'serve', address, data_dir: config.dataDir, capacity: config.maxConcurrentSyncs, jobs: app.kernel.jobs.name },
            `forgesync serving on ${address} from ${config.dataDir}`,
          );
          const signal = await new Promise<NodeJS.Signals>((resolve) => {
            process.once('SIGINT', () => resolve('SIGINT'));
            process.once('SIGTERM', () => resolve('SIGTERM'));
          });
          logger.info({ event: 'shutdown', signal }, `received ${signal}; stopping`);
          await server.close();
          // close() (in withForgesync) stops the scheduler, kills running git and releases leases.
        },
        { logLevel: 'info' },
      );
    });
}
