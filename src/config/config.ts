import { existsSync, readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { ConfigError } from './errors.js';
import type { ParseContext, SettingGroup, SettingValues } from './setting.js';

export interface LoadSettingsOptions {
  /** Path of a JSON config file; default FORGESYNC_CONFIG, else ./forgesync.json when present. */
  configFile?: string | undefined;
  /** Values that win over file and environment (command-line flags), by setting key. */
  overrides?: Readonly<Record<string, string | undefined>>;
  env?: NodeJS.ProcessEnv;
  cwd?: string;
}

const DEFAULT_CONFIG_FILE = 'forgesync.json';

/**
 * Reads the settings of `group` from, in rising priority: their defaults,
 * the JSON config file, `FORGESYNC_*` environment variables, explicit
 * overrides. Every problem is collected and thrown together as one
 * ConfigError. Settings are parsed in declaration order, so a default may
 * depend on settings declared before it.
 * @returns the values by field, plus the config file that was read.
 */
export function loadSettings<G extends SettingGroup>(group: G, options: LoadSettingsOptions = {}): SettingValues<G> & { configFile: string | undefined } {
  const env = options.env ?? process.env;
  const cwd = options.cwd ?? process.cwd();
  const problems: string[] = [];
  const { file, values: fileValues } = readConfigFile(options.configFile ?? env.FORGESYNC_CONFIG, cwd, problems);
  const known = new Set(Object.values(group).map((setting) => setting.key));
  for (const key of Object.keys(fileValues)) {
    if (!known.has(key)) problems.push(`${file}: unknown setting "${key}" (known: ${[...known].join(', ')})`);
  }

  const values: Record<string, unknown> = {};
  const context: ParseContext = { cwd, values };
  for (const [field, setting] of Object.entries(group)) {
    const override = options.overrides?.[setting.key];
    const fromEnv = env[setting.env] !== '' ? env[setting.env] : undefined;
    const given = override ?? fromEnv ?? fileValues[setting.key];
    const where = override !== undefined ? 'command line' : fromEnv !== undefined ? setting.env : given !== undefined ? `${file}: ${setting.key}` : 'default';
    const value = given ?? (typeof setting.default === 'function' ? setting.default(context) : setting.default);
    if (value === undefined) continue;
    try {
      values[field] = setting.parse(value, context);
    } catch (error) {
      problems.push(`${setting.key} (${where}): ${(error as Error).message}`);
    }
  }
  if (problems.length > 0) throw new ConfigError(problems);
  return { ...(values as SettingValues<G>), configFile: file };
}

function readConfigFile(explicit: string | undefined, cwd: string, problems: string[]): { file: string | undefined; values: Record<string, unknown> } {
  const file = explicit ? resolve(cwd, explicit) : resolve(cwd, DEFAULT_CONFIG_FILE);
  if (!existsSync(file)) {
    if (explicit) problems.push(`config file ${file} does not exist`);
    return { file: undefined, values: {} };
  }
  try {
    const values: unknown = JSON.parse(readFileSync(file, 'utf8'));
    if (values === null || typeof values !== 'object' || Array.isArray(values)) {
      problems.push(`config file ${file} must hold a JSON object`);
      return { file, values: {} };
    }
    return { file, values: values as Record<string, unknown> };
  } catch (error) {
    problems.push(error instanceof SyntaxError ? `config file ${file} is not valid JSON${/ at position \d+/.exec(error.message)?.[0] ?? ''}` : `config file ${file} cannot be read: ${(error as Error).message}`);
    return { file, values: {} };
  }
}
