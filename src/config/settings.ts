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
  port: {
    env: 'FORGESYNC_PORT',
    schema: z.coerce.number().int('must be an integer').min(0, 'must be a port number').max(65535, 'must be a port number'),
    doc: 'HTTP port of forgesync serve (default 8080).',
  },
  host: {
    env: 'FORGESYNC_HOST',
    schema: z.string().min(1),
    doc: 'Address forgesync serve binds (default 0.0.0.0; forced to 127.0.0.1 when no admin token is set).',
  },
  adminToken: {
    env: 'FORGESYNC_ADMIN_TOKEN',
    schema: z.string().min(16, 'must be at least 16 characters'),
    doc: 'Bearer token for the admin API and dashboard actions.',
  },
  readToken: {
    env: 'FORGESYNC_READ_TOKEN',
    schema: z.string().min(16, 'must be at least 16 characters'),
    doc: 'Optional read-only bearer token.',
  },
  githubWebhookSecret: {
    env: 'FORGESYNC_GITHUB_WEBHOOK_SECRET',
    schema: z.string().min(1),
    doc: 'HMAC secret of GitHub webhooks (X-Hub-Signature-256).',
  },
  gitlabWebhookToken: {
    env: 'FORGESYNC_GITLAB_WEBHOOK_TOKEN',
    schema: z.string().min(1),
    doc: 'Secret token of GitLab webhooks (X-Gitlab-Token).',
  },
  genericWebhookSecret: {
    env: 'FORGESYNC_GENERIC_WEBHOOK_SECRET',
    schema: z.string().min(1),
    doc: 'HMAC-SHA256 secret of the generic webhook (X-Forgesync-Signature-256: sha256=<hex>).',
  },
  snapshotMaxCount: {
    env: 'FORGESYNC_SNAPSHOT_MAX_COUNT',
    schema: z.coerce.number().int('must be an integer').min(1, 'must be at least 1'),
    doc: 'Snapshots kept on disk before the least recently used unheld ones are evicted (default 50).',
  },
  snapshotMaxBytes: {
    env: 'FORGESYNC_SNAPSHOT_MAX_BYTES',
    schema: z.string().regex(/^\d+(\.\d+)?\s*(B|KiB|MiB|GiB|TiB|KB|MB|GB|TB)?$/i, 'must be a size like 500MiB, 20GiB or plain bytes'),
    doc: 'Total size of snapshots kept on disk before unheld ones are evicted (default 10GiB).',
  },
  snapshotHold: duration('FORGESYNC_SNAPSHOT_HOLD', 'How long a snapshot made by the CLI or the API stays protected from eviction unless released (default 1h).'),
  secretsFile: {
    env: 'FORGESYNC_SECRETS_FILE',
    schema: z.string().min(1),
    doc: 'JSON file mapping credential names to secrets (optional).',
  },
} as const;

export type SettingKey = keyof typeof SETTINGS;
