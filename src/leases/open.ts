import { UnsupportedLeaseUrlError } from './errors.js';
import { LeaseManager } from './manager.js';
import type { LeaseStore } from './types.js';
import type { PoolLimits, SessionLimits } from '../util/database-sessions.js';

/** What opening a lease store may be told besides its URL. */
export interface LeaseStoreOptions {
  /** Limits of the store's database sessions (PostgreSQL, MySQL/MariaDB; see SessionLimits); unset: the server's own. */
  session?: SessionLimits;
  /** Size of the store's connection pool and how long a caller waits for a connection (PostgreSQL); unset: 10 and 5 s. */
  pool?: PoolLimits;
}

type StoreFactory = (url: string, options: LeaseStoreOptions) => Promise<LeaseStore>;

// Drivers are imported only when their scheme is used, so an embedded
// deployment never loads ioredis, pg or mysql2.
const DRIVERS: Record<string, () => Promise<StoreFactory>> = {
  sqlite: async () => (await import('./stores/sqlite.js')).createSqliteStore,
  redis: async () => (await import('./stores/redis.js')).createRedisStore,
  rediss: async () => (await import('./stores/redis.js')).createRedisStore,
  postgres: async () => (await import('./stores/postgres.js')).createPostgresStore,
  postgresql: async () => (await import('./stores/postgres.js')).createPostgresStore,
  mysql: async () => (await import('./stores/mysql.js')).createMysqlStore,
  mariadb: async () => (await import('./stores/mysql.js')).createMysqlStore,
};

/** The scheme of a lease or database URL, lower-cased, without the colon. */
export function urlScheme(url: string): string | undefined {
  return /^([a-z][a-z0-9+.-]*):/i.exec(url)?.[1]?.toLowerCase();
}

/**
 * Opens a lease manager on the backend named by `url`:
 * `sqlite:<file>`, `redis://host:port[/db]`, `postgres://…` or `mysql://…`.
 * Rejects with UnsupportedLeaseUrlError for anything else and with
 * LeaseBackendUnavailableError when the backend cannot be reached.
 */
export async function openLeaseManager(url: string, options: LeaseStoreOptions = {}): Promise<LeaseManager> {
  if (typeof url !== 'string' || url.trim() === '') {
    throw new UnsupportedLeaseUrlError('lease URL is empty; expected sqlite:<file>, redis://, postgres:// or mysql://');
  }
  const scheme = urlScheme(url);
  const load = scheme ? DRIVERS[scheme] : undefined;
  if (!load) {
    throw new UnsupportedLeaseUrlError(
      `lease URL scheme "${scheme ?? url.slice(0, 20)}" is not supported; expected sqlite:<file>, redis://, rediss://, postgres://, postgresql://, mysql:// or mariadb://`,
    );
  }
  const createStore = await load();
  return new LeaseManager(await createStore(url, options));
}
