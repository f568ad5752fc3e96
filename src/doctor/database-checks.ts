import { urlScheme } from '../leases/open.js';
import { redactUrl } from '../util/redact.js';
import { RegistryUnreadableError } from './store/registry-facts.js';
import { mysqlVersion, postgresVersion } from './store/server-versions.js';
import { fail, messageOf, ok, warn, type CheckContext, type CheckGroup, type CheckResult } from './types.js';

/** Skew at which times written by one process and read by another start to mislead (retry times, last-seen, lease displays). */
const SKEW_WARN_MS = 1_000;

/** The registry database: reachable, its version, whether forgesync has set it up; and its clock against ours. */
export const databaseChecks: CheckGroup = {
  name: 'database',
  async run({ config, registry }: CheckContext): Promise<CheckResult[]> {
    const shown = redactUrl(config.databaseUrl);
    if (registry.read === 'failed') {
      const database =
        registry.error instanceof RegistryUnreadableError
          ? fail('database', `${shown}: ${registry.error.message}`, 'give the database user read and write access to forgesync\'s tables (or, for SQLite, check the file and its directory), then run again')
          : fail('database', `${shown} is unreachable: ${messageOf(registry.error)}`, 'check FORGESYNC_DATABASE_URL (host, port, database, user and password) and that the server is running and accepts connections from this machine');
      return [database, warn('clock', 'not measured: the database could not be read', 'fix the database first')];
    }
    const { facts } = registry;
    const database = facts.absent
      ? ok('database', `${facts.version}; ${shown} does not exist yet: forgesync serve creates it`)
      : facts.unmigrated
        ? ok('database', `${facts.version} at ${shown}; no forgesync tables yet: forgesync serve creates them`)
        : ok('database', `${facts.version} at ${shown}`);
    return [database, clockCheck(facts.clock, config.leaseTtlMs)];
  },
};

/**
 * The database's clock against this machine's. Processes compare times they
 * wrote with their own clocks (a shard's last beat, retry and hold deadlines),
 * so skew beyond a third of the lease ttl — a heartbeat's period — makes a
 * live shard look down or a retry run early; less than that only blurs what
 * the dashboard shows.
 */
export function clockCheck(clock: { skewMs: number; roundTripMs: number } | undefined, leaseTtlMs: number): CheckResult {
  if (clock === undefined) return ok('clock', 'the SQLite registry is on this machine: one clock');
  const failMs = Math.max(SKEW_WARN_MS, Math.floor(leaseTtlMs / 3));
  const skew = Math.abs(clock.skewMs);
  const detail = `database clock ${clock.skewMs >= 0 ? 'ahead' : 'behind'} by ${skew} ms (±${Math.ceil(clock.roundTripMs / 2)} ms)`;
  const hint = 'synchronise the clocks of this machine and the database server (chrony or systemd-timesyncd against the same NTP servers)';
  if (skew >= failMs) return fail('clock', `${detail}; at most ${failMs} ms (a third of leaseTtl) is safe`, hint);
  if (skew >= SKEW_WARN_MS) return warn('clock', detail, hint);
  return ok('clock', detail);
}

/** The lease backend when it is not the registry database itself (Redis leases are checked with the other Redis uses). */
export const leaseBackendChecks: CheckGroup = {
  name: 'leases',
  async run({ config, timeoutMs }: CheckContext): Promise<CheckResult[]> {
    const { leaseUrl, databaseUrl } = config;
    const shown = redactUrl(leaseUrl);
    const scheme = urlScheme(leaseUrl);
    if (leaseUrl === databaseUrl) return [ok('leases', 'in the registry database')];
    if (scheme === 'redis' || scheme === 'rediss') return [];
    if (scheme === 'sqlite') return [ok('leases', `SQLite file ${shown.replace(/^sqlite:/i, '')}`)];
    try {
      const version = scheme === 'mysql' || scheme === 'mariadb' ? await mysqlVersion(leaseUrl, timeoutMs) : await postgresVersion(leaseUrl, timeoutMs);
      return [ok('leases', `${version} at ${shown}`)];
    } catch (error) {
      return [fail('leases', `${shown} is unreachable: ${messageOf(error)}`, 'check FORGESYNC_LEASE_URL (host, port, database, user and password) and that the server is running')];
    }
  },
};
