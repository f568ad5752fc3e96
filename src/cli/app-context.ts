import type { Command } from 'commander';
import { Forgesync } from '../app/forgesync.js';
import type { ModuleApis } from '../app/compose.js';
import type { LoadConfigOptions } from '../app/config.js';
import { createLogger } from '../logging/logger.js';
import type { WithApi } from '../module/definition.js';
import { commandConfig } from './context.js';

export interface WithForgesyncOptions {
  /** The level logged at unless FORGESYNC_LOG_LEVEL says otherwise (default `warn`). */
  logLevel?: string;
  /** Settings the command's own flags give (`serve --role`), over file and environment. */
  overrides?: LoadConfigOptions['overrides'];
}

/**
 * Opens forgesync for one CLI command and closes it afterwards. Logs go to
 * stderr at `warn` (FORGESYNC_LOG_LEVEL overrides) so stdout stays clean
 * for `--json`; on a terminal, git's progress is drawn on stderr.
 */
export async function withForgesync<T>(command: Command, run: (app: Forgesync) => Promise<T>, options: WithForgesyncOptions = {}): Promise<T> {
  const config = commandConfig(command, options.overrides);
  const json = Boolean(command.opts().json);
  const showProgress = process.stderr.isTTY && !json;
  const app = await Forgesync.open(config, {
    logger: createLogger({ level: config.logLevel ?? options.logLevel ?? 'warn' }),
    ...(showProgress
      ? { onProgress: (source, line) => process.stderr.write(`\r\u001b[K${source.name}: ${line.slice(0, 100)}`) }
      : {}),
  });
  try {
    return await run(app);
  } finally {
    if (showProgress) process.stderr.write('\r\u001b[K');
    await app.close();
  }
}

/** How a module's commands reach its API: forgesync opened for the command, the module's API handed over. */
export function withApiOf<Name extends keyof ModuleApis>(name: Name): WithApi<ModuleApis[Name]> {
  return (command, run, options) => withForgesync(command, (app) => run(app[name]), options);
}
