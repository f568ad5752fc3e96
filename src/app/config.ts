import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadSettings, type LoadSettingsOptions } from '../config/config.js';
import type { SettingValues } from '../config/setting.js';
import { kernelSettings } from '../kernel/settings.js';
import { replicationSettings } from '../replication/settings.js';
import { serverSettings } from '../server/settings.js';
import { snapshotSettings } from '../snapshots/settings.js';
import { importerSettings } from '../importer/settings.js';
import { feedSettings } from '../feeds/settings.js';
import { clusterSettings } from '../cluster/settings.js';
import { ServerPaths } from '../util/server-paths.js';

/**
 * Every setting forgesync reads, in the order they are parsed (a default may
 * depend on settings before it) and listed in the README: the kernel's, the
 * server's, then each module's. A new module adds its group here.
 */
// (The settings files themselves, not the module definitions: those import the CLI, which imports this.)
export const SETTINGS = { ...kernelSettings, ...serverSettings, ...replicationSettings, ...snapshotSettings, ...importerSettings, ...feedSettings, ...clusterSettings };

/** The validated configuration, every default filled in. */
export type ForgesyncConfig = SettingValues<typeof SETTINGS> & {
  /** Directory of the bare mirrors: `<dataDir>/mirrors`. */
  mirrorsDir: string;
  /** Directory of the snapshots: `<dataDir>/snapshots`. */
  snapshotsDir: string;
  /** The config file that was read, if any. */
  configFile: string | undefined;
};

export type LoadConfigOptions = LoadSettingsOptions;

/**
 * Loads the configuration from, in rising priority: defaults, the JSON
 * config file (`configFile`, FORGESYNC_CONFIG, or ./forgesync.json),
 * `FORGESYNC_*` environment variables, and `overrides` (command-line flags,
 * by setting key). Every problem is reported at once, in one ConfigError.
 */
export function loadConfig(options: LoadConfigOptions = {}): ForgesyncConfig {
  const values = loadSettings(SETTINGS, options);
  return { ...values, mirrorsDir: join(values.dataDir, 'mirrors'), snapshotsDir: join(values.dataDir, 'snapshots') };
}

/**
 * The server's own directories and files as HTTP answers name them: error
 * texts shown to API callers say `<mirrors>/x.git`, not where the data
 * directory lies (see util/server-paths.ts). The temporary directory is
 * among them: git runs there, and tests and tools clone into it.
 */
export function serverPathsOf(config: ForgesyncConfig): ServerPaths {
  return new ServerPaths([
    { path: config.mirrorsDir, shownAs: '<mirrors>' },
    { path: config.snapshotsDir, shownAs: '<snapshots>' },
    { path: config.feedFileRoot, shownAs: '<feedFiles>' },
    { path: config.dataDir, shownAs: '<dataDir>' },
    { path: config.secretsFile, shownAs: '<secretsFile>' },
    { path: config.sshKeyFile, shownAs: '<sshKeyFile>' },
    { path: tmpdir(), shownAs: '<tmp>' },
  ]);
}
