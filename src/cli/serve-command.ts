import { Command } from 'commander';
import { generatedAdminToken } from '../server/admin-token.js';
import { defaultAllowedHosts } from '../server/request-guards.js';
import { requireSharedBackends } from '../cluster/preflight.js';
import { parseRoles, rolesText } from '../cluster/roles.js';
import { withForgesync } from './app-context.js';
import { option, parsedBy, wholeNumber } from '../module/command-options.js';

/** Resolves with the first SIGINT or SIGTERM. */
function shutdownSignal(): Promise<NodeJS.Signals> {
  return new Promise((resolve) => {
    process.once('SIGINT', () => resolve('SIGINT'));
    process.once('SIGTERM', () => resolve('SIGTERM'));
  });
}

/**
 * `forgesync serve`: scheduler, sync workers and the HTTP service (API,
 * webhooks, dashboard, metrics) in the foreground until SIGINT/SIGTERM;
 * `--role` (FORGESYNC_ROLE) runs only some of them, the others running in
 * other processes on the same backends.
 */
export function serveCommand(): Command {
  return new Command('serve')
    .description('run the scheduler, sync workers and HTTP service until SIGINT or SIGTERM')
    .addOption(option('--port <port>', 'HTTP port (default: $FORGESYNC_PORT or 8080)', wholeNumber({ min: 0, max: 65535 })))
    .option('--host <address>', 'address to bind (default: $FORGESYNC_HOST, else 0.0.0.0 with an admin token configured, 127.0.0.1 with a generated one)')
    .addOption(option('--role <roles>', 'all, or a comma list of api, worker, scheduler (default: $FORGESYNC_ROLE or all)', parsedBy((text) => rolesText(parseRoles(text)), 'all, or a comma list of api, worker, scheduler')))
    .action(async (options: { port?: number; host?: string; role?: string }, command: Command) => {
      await withForgesync(
        command,
        async (app) => {
          const { config, logger } = app;
          const roles = parseRoles(config.role);
          // Before anything listens: a misconfigured distributed process must not half-start.
          requireSharedBackends(roles, config);
          if (!roles.api) {
            await app.startService();
            logger.info({ event: 'serve', roles: rolesText(roles), data_dir: config.dataDir, jobs: app.kernel.jobs.name }, `forgesync running as ${rolesText(roles)} from ${config.dataDir}`);
            const signal = await shutdownSignal();
            logger.info({ event: 'shutdown', signal }, `received ${signal}; stopping`);
            return;
          }
          // The admin API never runs open: without a configured token, one is generated and kept.
          const generated = config.adminToken ? undefined : await generatedAdminToken(config.dataDir);
          const adminToken = config.adminToken ?? generated!.token;
          // A generated token has not been handed to anyone yet: serve this machine only unless told otherwise.
          const host = options.host ?? config.host ?? (generated ? '127.0.0.1' : '0.0.0.0');
          const allowedHosts = config.allowedHosts ?? defaultAllowedHosts(host);
          // The HTTP stack is loaded by `serve` only: every other command starts without it.
          const { buildServer } = await import('../server/app.js');
          const server = await buildServer(app, {
            tokens: { admin: adminToken, read: config.readToken },
            allowedHosts,
            ...(config.trustProxy ? { trustProxy: config.trustProxy } : {}),
            ...(config.publicUrl ? { publicUrl: config.publicUrl } : {}),
          });
          const address = await server.listen({ port: options.port ?? config.port, host });
          await app.startService();
          logger.info(
            { event: 'serve', address, roles: rolesText(roles), data_dir: config.dataDir, capacity: config.maxConcurrentSyncs, jobs: app.kernel.jobs.name, allowed_hosts: allowedHosts },
            `forgesync serving on ${address} from ${config.dataDir}`,
          );
          if (generated) {
            // On standard output, once, as notebook servers do; never in the log. The fragment never reaches the server.
            const port = new URL(address).port;
            const dashboard = `http://${host === '0.0.0.0' || host === '::' ? 'localhost' : host.includes(':') ? `[${host}]` : host}:${port}/#token=${adminToken}`;
            process.stdout.write(
              `forgesync: no FORGESYNC_ADMIN_TOKEN is set; ${generated.created ? 'generated an admin token' : 'using the admin token'} kept in ${generated.file}\n` +
                `forgesync: dashboard at ${dashboard}\n`,
            );
          }
          const signal = await shutdownSignal();
          logger.info({ event: 'shutdown', signal }, `received ${signal}; stopping`);
          await server.close();
          // close() (in withForgesync) stops the scheduler, kills running git and releases leases.
        },
        // --role is the role setting given on the command line: the cluster module reads it.
        { logLevel: 'info', overrides: { role: options.role } },
      );
    });
}
