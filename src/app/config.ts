import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadSettings, type LoadSettingsOptions } from '../config/config.js';
import type { SettingValues } from '../config/setting.js';
import { kernelSettings } from '../kernel/settings.js';
import { serverSettings } from '../server/settings.js';
import { ServerPaths } from '../util/server-paths.js';
import { MODULES } from './modules.js';

/** One type of the settings of every module together. */
type ModulesSettings = UnionToIntersection<(typeof MODULES)[number]['settings']>;
type UnionToIntersection<U> = (U extends unknown ? (value: U) => void : never) extends (value: infer I) => void ? I : never;

/**
 * Every setting forgesync reads, in the order they are parsed (a default may
 * depend on settings before it) and listed in the README: the kernel's, the
 * server's, then each module's, as its definition declares them.
 */
export const SETTINGS = Object.assign({}, kernelSettings, serverSettings, ...MODULES.map((module) => module.settings)) as typeof kernelSettings & typeof serverSettings & ModulesSettings;

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
