import { join } from 'node:path';
import { boolean, duration, integer, path, setting, text, type ParseContext } from '../config/setting.js';
import { parseNetworks } from '../egress/networks.js';
import { sessionLimitsFor } from '../util/database-sessions.js';
import { formatDuration } from '../util/duration.js';

/** Settings of the kernel: where data lives and which backends hold the registry, the leases and the jobs. */
export const kernelSettings = {
  dataDir: setting({
    key: 'dataDir',
    env: 'FORGESYNC_DATA_DIR',
    default: './data',
    doc: 'Directory of the SQLite file, mirrors and snapshots.',
    parse: path,
  }),
  databaseUrl: setting({
    key: 'databaseUrl',
    env: 'FORGESYNC_DATABASE_URL',
    // undefined when dataDir itself was refused: that problem is reported once, not twice.
    default: ({ values }) => (values.dataDir === undefined ? undefined : `sqlite:${join(String(values.dataDir), 'forgesync.db')}`),
    defaultDoc: '`sqlite:<dataDir>/forgesync.db`',
    doc: 'Registry database: `sqlite:<file>` or `postgres://…`.',
    parse: text({ pattern: /^(sqlite:|postgres(ql)?:\/\/)/i, message: 'must be sqlite:<file> or postgres://…' }),
  }),
  leaseUrl: setting({
    key: 'leaseUrl',
    env: 'FORGESYNC_LEASE_URL',
    default: ({ values }) => (values.databaseUrl === undefined ? undefined : String(values.databaseUrl)),
    defaultDoc: 'the database URL',
    doc: 'Lease backend: `sqlite:<file>`, `redis://`, `postgres://` or `mysql://`.',
    parse: text({
      pattern: /^(sqlite:|rediss?:\/\/|postgres(ql)?:\/\/|mysql:\/\/|mariadb:\/\/)/i,
      message: 'must be sqlite:<file>, redis://, postgres:// or mysql://',
    }),
  }),
  jobsUrl: setting({
    key: 'jobsUrl',
    env: 'FORGESYNC_JOBS_URL',
    defaultDoc: 'none: jobs run in-process',
    doc: 'Job transport: unset for in-process jobs; `redis://host:port[/db][?prefix=P]` for BullMQ, shared by every process.',
    parse: text({ pattern: /^rediss?:\/\//i, message: 'must be redis://… or rediss://… (or unset for in-process jobs)' }),
  }),
  leaseTtlMs: setting({
    key: 'leaseTtl',
    env: 'FORGESYNC_LEASE_TTL',
    default: '15s',
    doc: 'Ttl of the leases work runs under, renewed by heartbeat every third.',
    parse: duration(100, 24 * 3_600_000),
  }),
  schedulerTickMs: setting({
    key: 'schedulerTick',
    env: 'FORGESYNC_SCHEDULER_TICK',
    default: '2s',
    doc: 'How often the scheduler looks for due work.',
    parse: duration(10, 24 * 3_600_000),
  }),
  databasePoolSize: setting({
    key: 'databasePoolSize',
    env: 'FORGESYNC_DATABASE_POOL_SIZE',
    default: '10',
    doc: 'Connections one process keeps to a PostgreSQL registry at most (and as many again to a PostgreSQL lease store).',
    parse: integer(1, 1000),
  }),
  databasePoolWaitMs: setting({
    key: 'databasePoolWait',
    env: 'FORGESYNC_DATABASE_POOL_WAIT',
    default: '5s',
    doc: 'How long a query waits for a free connection of such a pool (or for a new one to open) before it fails with `timeout exceeded when trying to connect`.',
    parse: duration(100, 3_600_000),
  }),
  databaseIdleInTransactionTimeoutMs: setting({
    key: 'databaseIdleInTransactionTimeout',
    env: 'FORGESYNC_DATABASE_IDLE_IN_TRANSACTION_TIMEOUT',
    default: (context) => leaseTtlShare(context, 'idleInTransactionTimeoutMs'),
    defaultDoc: 'a third of `leaseTtl`, at least `1s`',
    doc:
      "PostgreSQL (registry and leases): a transaction whose process sends nothing for this long (paused, hung, cut off) is ended by the server and its locks freed, before that process's lease can lapse: " +
      'it cannot keep other writers waiting, and when it wakes up its transaction is gone (`idle_in_transaction_session_timeout`). `0` keeps what the server (or the role) sets.',
    parse: duration(0, 24 * 3_600_000),
  }),
  databaseLockTimeoutMs: setting({
    key: 'databaseLockTimeout',
    env: 'FORGESYNC_DATABASE_LOCK_TIMEOUT',
    default: (context) => leaseTtlShare(context, 'lockTimeoutMs'),
    defaultDoc: 'half of `leaseTtl`, at least `1s`',
    doc:
      'How long a statement waits for a lock before it fails (and is retried as a transient failure): PostgreSQL `lock_timeout`, and on MySQL/MariaDB lease sessions `lock_wait_timeout` and ' +
      '`innodb_lock_wait_timeout` (rounded up to seconds). `0` keeps what the server (or the role) sets.',
    parse: duration(0, 24 * 3_600_000),
  }),
  databaseStatementTimeoutMs: setting({
    key: 'databaseStatementTimeout',
    env: 'FORGESYNC_DATABASE_STATEMENT_TIMEOUT',
    default: '1m',
    doc: 'Longest statement on PostgreSQL (`statement_timeout`) and MariaDB lease sessions (`max_statement_time`); migrations are not limited. `0` keeps what the server (or the role) sets.',
    parse: duration(0, 24 * 3_600_000),
  }),
  gitProtocols: setting({
    key: 'gitProtocols',
    env: 'FORGESYNC_GIT_PROTOCOLS',
    default: 'https,ssh',
    doc:
      'Protocols git may use for upstreams; add `http`, `git` or `file` explicitly. Without `http`, no token goes over plain http ' +
      '(with it, only where the credential\'s binding names `http://` or the port) and an import\'s `--api-url` must be https.',
    parse: text({
      pattern: /^\s*(https|http|ssh|git|file)(\s*,\s*(https|http|ssh|git|file))*\s*$/,
      message: 'must be a comma list of https, http, ssh, git, file',
    }),
  }),
  allowNetworks: setting({
    key: 'allowNetworks',
    env: 'FORGESYNC_ALLOW_NETWORKS',
    defaultDoc: 'none: public addresses only',
    doc:
      'Networks forgesync may connect to although they are refused by default (loopback, private, link-local, carrier-grade NAT, …): ' +
      'a comma list of CIDRs or addresses, e.g. `10.20.0.0/16,fd00:1::/64`.',
    parse: parseNetworks,
  }),
  sshKeyFile: setting({
    key: 'sshKeyFile',
    env: 'FORGESYNC_SSH_KEY',
    defaultDoc: 'none: no key',
    doc: 'Private key ssh offers to ssh upstreams, the only one (never `~/.ssh`); host keys are pinned in `<dataDir>/ssh/known_hosts`.',
    parse: path,
  }),
  sshAgent: setting({
    key: 'sshAgent',
    env: 'FORGESYNC_SSH_AGENT',
    default: 'false',
    doc: 'Let ssh use the agent at `SSH_AUTH_SOCK` (with `sshKeyFile`: for that key only).',
    parse: boolean,
  }),
  secretsFile: setting({
    key: 'secretsFile',
    env: 'FORGESYNC_SECRETS_FILE',
    doc: 'JSON file mapping credential names (and `feed:<name>` feed secrets) to secrets and the hosts each is bound to.',
    parse: path,
  }),
  logLevel: setting({
    key: 'logLevel',
    env: 'FORGESYNC_LOG_LEVEL',
    defaultDoc: '`info` for serve, `warn` for other commands',
    doc: 'Level of the JSON log on stderr (`fatal` … `trace`, `silent`).',
    parse: text({ pattern: /^(fatal|error|warn|info|debug|trace|silent)$/, message: 'must be fatal, error, warn, info, debug, trace or silent' }),
  }),
};

/** A limit's default as a share of the lease ttl parsed before it (see sessionLimitsFor); undefined when the ttl itself was refused. */
function leaseTtlShare({ values }: ParseContext, limit: 'idleInTransactionTimeoutMs' | 'lockTimeoutMs'): string | undefined {
  return typeof values.leaseTtlMs === 'number' ? formatDuration(sessionLimitsFor(values.leaseTtlMs)[limit]) : undefined;
}
