import { existsSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { ConfigError } from './errors.js';
import { parseDuration } from '../replication/schedule.js';
import { SETTINGS, type SettingKey } from './settings.js';

/** The validated configuration, with every default filled in. */
export interface ForgesyncConfig {
  /** Absolute path of the data directory. */
  dataDir: string;
  databaseUrl: string;
  leaseUrl: string;
  /** Directory of the bare mirrors: `<dataDir>/mirrors`. */
  mirrorsDir: string;
  gitProtocols: string;
  maxConcurrentSyncs: number;
  syncIntervalMs: number;
  schedulerTickMs: number;
  leaseTtlMs: number;
  retryBaseMs: number;
  retryMaxMs: number;
  verifyIntervalMs: number;
  /** Directory of the snapshots: `<dataDir>/snapshots`. */
  snapshotsDir: string;
  snapshotMaxCount: number;
  snapshotMaxBytes: number;
  snapshotHoldMs: number;
  secretsFile: string | undefined;
  port: number;
  host: string | undefined;
  adminToken: string | undefined;
  readToken: string | undefined;
  githubWebhookSecret: string | undefined;
  gitlabWebhookToken: string | undefined;
  genericWebhookSecret: string | undefined;
  /** The config file that was read, if any. */
  configFile: string | undefined;
}

export interface LoadConfigOptions {
  /** Path of a JSON config file; default FORGESYNC_CONFIG, else ./forgesync.json when present. */
  configFile?: string;
  /** Values that win over file and environment (command-line flags). */
  overrides?: Partial<Record<SettingKey, string | undefined>>;
  env?: NodeJS.ProcessEnv;
  cwd?: string;
}

const DEFAULT_CONFIG_FILE = 'forgesync.json';

/**
 * Loads configuration from, in rising priority: defaults, the JSON config
 * file, `FORGESYNC_*` environment variables, explicit overrides. Every
 * problem is collected and thrown together as one ConfigError.
 */
export function loadConfig(options: LoadConfigOptions = {}): ForgesyncConfig {
  const env = options.env ?? process.env;
  const cwd = options.cwd ?? process.cwd();
  const problems: string[] = [];
  const { file, values: fileValues } = readConfigFile(options.configFile ?? env.FORGESYNC_CONFIG, cwd, problems);

  const raw: Partial<Record<SettingKey, unknown>> = {};
  for (const [key, setting] of Object.entries(SETTINGS) as [SettingKey, (typeof SETTINGS)[SettingKey]][]) {
    const fromEnv = env[setting.env];
    const value = options.overrides?.[key] ?? (fromEnv !== undefined && fromEnv !== '' ? fromEnv : fileValues[key]);
    if (value === undefined) continue;
    const parsed = setting.schema.safeParse(value);
    if (parsed.success) raw[key] = parsed.data;
    else {
      const where = options.overrides?.[key] !== undefined ? 'command line' : fromEnv ? setting.env : `${file}: ${key}`;
      problems.push(`${key} (${where}): ${parsed.error.issues.map((issue) => issue.message).join('; ')}`);
    }
  }
  for (const key of Object.keys(fileValues)) {
    if (!(key in SETTINGS)) problems.push(`${file}: unknown setting "${key}" (known: ${Object.keys(SETTINGS).join(', ')})`);
  }
  if (problems.length > 0) throw new ConfigError(problems);

  const dataDir = resolve(cwd, (raw.dataDir as string | undefined) ?? './data');
  const databaseUrl = (raw.databaseUrl as string | undefined) ?? `sqlite:${join(dataDir, 'forgesync.db')}`;
  const duration = (key: SettingKey, fallback: string) => parseDuration((raw[key] as string | undefined) ?? fallback);
  return {
    dataDir,
    databaseUrl,
    leaseUrl: (raw.leaseUrl as string | undefined) ?? databaseUrl,
    mirrorsDir: join(dataDir, 'mirrors'),
    gitProtocols: (raw.gitProtocols as string | undefined) ?? 'https,ssh',
    maxConcurrentSyncs: (raw.maxConcurrentSyncs as number | undefined) ?? 4,
    syncIntervalMs: Math.max(1000, duration('syncInterval', '1h')),
    schedulerTickMs: duration('schedulerTick', '2s'),
    leaseTtlMs: duration('leaseTtl', '15s'),
    retryBaseMs: duration('retryBase', '15s'),
    retryMaxMs: duration('retryMax', '1h'),
    verifyIntervalMs: duration('verifyInterval', '24h'),
    snapshotsDir: join(dataDir, 'snapshots'),
    snapshotMaxCount: (raw.snapshotMaxCount as number | undefined) ?? 50,
    snapshotMaxBytes: parseSize((raw.snapshotMaxBytes as string | undefined) ?? '10GiB'),
    snapshotHoldMs: duration('snapshotHold', '1h'),
    secretsFile: raw.secretsFile as string | undefined,
    port: (raw.port as number | undefined) ?? 8080,
    host: raw.host as string | undefined,
    adminToken: raw.adminToken as string | undefined,
    readToken: raw.readToken as string | undefined,
    githubWebhookSecret: raw.githubWebhookSecret as string | undefined,
    gitlabWebhookToken: raw.gitlabWebhookToken as string | undefined,
    genericWebhookSecret: raw.genericWebhookSecret as string | undefined,
    configFile: file,
  };
}

function readConfigFile(
  explicit: string | undefined,
  cwd: string,
  problems: string[],
): { file: string | undefined; values: Record<string, unknown> } {
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
    problems.push(`config file ${file} is not valid JSON: ${(error as Error).message}`);
    return { file, values: {} };
  }
}

const SIZE_UNITS: Record<string, number> = { b: 1, kb: 1e3, mb: 1e6, gb: 1e9, tb: 1e12, kib: 2 ** 10, mib: 2 ** 20, gib: 2 ** 30, tib: 2 ** 40 };

/** `500MiB`, `20GB`, `1048576` → bytes (the schema has already checked the shape). */
export function parseSize(text: string): number {
  const match = /^(\d+(?:\.\d+)?)\s*([a-z]*)$/i.exec(text.trim());
  if (!match) throw new ConfigError([`not a size: ${JSON.stringify(text)}`]);
  return Math.floor(Number(match[1]) * (SIZE_UNITS[(match[2] || 'b').toLowerCase()] ?? Number.NaN));
}
