import type { Command } from 'commander';
import { Forgesync } from '../app/forgesync.js';
import { createLogger } from '../logging/logger.js';
import { commandConfig } from './context.js';

/**
 * Opens forgesync for one CLI command and closes it afterwards. Logs go to
 * stderr at `warn` (FORGESYNC_LOG_LEVEL overrides) so stdout stays clean
 * for `--json`; on a terminal, git's progress is drawn on stderr.
 */
export async function withForgesync<T>(command: Command, run: (app: Forgesync) => Promise<T>, options: { logLevel?: string } = {}): Promise<T> {
  const config = commandConfig(command);
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
