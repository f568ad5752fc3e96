import type { Command } from 'commander';
import { loadConfig, type ForgesyncConfig, type LoadConfigOptions } from '../app/config.js';

/** Options every command accepts (defined on the root program). */
export interface GlobalOptions {
  config?: string;
  dataDir?: string;
  leaseUrl?: string;
  databaseUrl?: string;
}

/**
 * The configuration for a command: global flags and the command's own
 * (`overrides`, by setting key) applied over file and environment.
 */
export function commandConfig(command: Command, overrides: LoadConfigOptions['overrides'] = {}): ForgesyncConfig {
  const options = command.optsWithGlobals<GlobalOptions>();
  return loadConfig({
    configFile: options.config,
    overrides: { dataDir: options.dataDir, leaseUrl: options.leaseUrl, databaseUrl: options.databaseUrl, ...overrides },
  });
}
