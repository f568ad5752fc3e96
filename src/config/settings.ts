import { z } from 'zod';

const DURATION = /^(\d+|(\d+(ms|s|m|h|d))+)$/;

/** A duration setting such as `15s`, `1h30m` or plain milliseconds. */
function duration(env: string, doc: string) {
  return { env, schema: z.string().regex(DURATION, 'must be a duration like 250ms, 15s, 30m or 1h'), doc };
}

/**
 * Every setting forgesync reads: its key in the config file, its
 * environment variable and its schema. Later capabilities add rows here.
 */
export const SETTINGS = {
  dataDir: {
    env: 'FORGESYNC_DATA_DIR',
    schema: z.string().min(1, 'must not be empty'),
    doc: 'Directory for the SQLite file, mirrors and snapshots (default ./data).',
  },
  databaseUrl: {
    env: 'FORGESYNC_DATABASE_URL',
    schema: z.string().regex(/^(sqlite:|postgres(ql)?:\/\/)/i, 'must be sqlite:<file> or postgres://…'),
    doc: 'Registry database (default: sqlite:<dataDir>/forgesync.db).',
  },
  leaseUrl: {
    env: 'FORGESYNC_LEASE_URL',
    schema: z
      .string()
      .regex(/^(sqlite:|rediss?:\/\/|postgres(ql)?:\/\/|mysql:\/\/|mariadb:\/\/)/i, 'must be sqlite:<file>, redis://, postgres:// or mysql://'),
    doc: 'Lease backend (default: the same SQLite file as the registry).',
  },
  gitProtocols: {
    env: 'FORGESYNC_GIT_PROTOCOLS',
    schema: z
      .string()
      .regex(/^\s*(https|http|ssh|git|file)(\s*,\s*(https|http|ssh|git|file))*\s*$/, 'must be a comma list of https, http, ssh, git, file'),
    doc: 'Protocols git may use for upstreams (default https,ssh; add file for local paths).',
  },
  maxConcurrentSyncs: {
    env: 'FORGESYNC_MAX_CONCURRENT_SYNCS',
    schema: z.coerce.number().int('must be an integer').min(1, 'must be at least 1').max(256, 'must be at most 256'),
    doc: 'Capacity: syncs running at once in one process (default 4).',
  },
  syncInterval: duration('FORGESYNC_SYNC_INTERVAL', 'Default sync interval for sources without their own schedule (default 1h).'),
  schedulerTick: duration('FORGESYNC_SCHEDULER_TICK', 'How often the scheduler looks for due work (default 2s).'),
  leaseTtl: duration('FORGESYNC_LEASE_TTL', 'Ttl of sync and scheduler leases, renewed by heartbeat every third (default 15s).'),
  retryBase: duration('FORGESYNC_RETRY_BASE', 'First retry delay after a failed sync (default 15s); doubles per failure.'),
  retryMax: duration('FORGESYNC_RETRY_MAX', 'Cap of the retry delay, and the retry cadence of an upstream that is gone (default 1h).'),
  verifyInterval: duration('FORGESYNC_VERIFY_INTERVAL', 'How often a synced mirror is re-verified against its recorded refs checksum (default 24h).'),
  secretsFile: {
    env: 'FORGESYNC_SECRETS_FILE',
    schema: z.string().min(1),
    doc: 'JSON file mapping credential names to secrets (optional).',
  },
} as const;

export type SettingKey = keyof typeof SETTINGS;
