import type { Command } from 'commander';
import { loadConfig, type ForgesyncConfig } from '../app/config.js';

/** Options every command accepts (defined on the root program). */
export interface GlobalOptions {
  config?: string;
  dataDir?: string;
  leaseUrl?: string;
  databaseUrl?: string;
}

/** The configuration for a command, with global flags applied over file and environment. */
export function commandConfig(command: Command): ForgesyncConfig {
  const options = command.optsWithGlobals<GlobalOptions>();
  return loadConfig({
    configFile: options.config,
    overrides: { dataDir: options.dataDir, leaseUrl: options.leaseUrl, databaseUrl: options.databaseUrl },
  });
}
