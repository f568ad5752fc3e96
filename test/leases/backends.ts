import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** One backend under test: its URL and how to reach under the lease manager's feet. */
export interface BackendUnderTest {
  name: string;
  url: string;
  /** Start command to print when the server does not answer. */
  hint: string;
}

export const REDIS_URL = process.env.FORGESYNC_TEST_REDIS_URL ?? 'redis://127.0.0.1:6379/0';
export const POSTGRES_URL = process.env.FORGESYNC_TEST_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
export const MYSQL_URL = process.env.FORGESYNC_TEST_MYSQL_URL ?? 'mysql://root@127.0.0.1:3306/test';

export function sqliteBackend(): BackendUnderTest {
  const dir = mkdtempSync(join(tmpdir(), 'forgesync-lease-'));
  return { name: 'sqlite', url: `sqlite:${join(dir, 'forgesync.db')}`, hint: '' };
}

export const redisBackend: BackendUnderTest = { name: 'redis', url: REDIS_URL, hint: 'redis-server --daemonize yes' };
export const postgresBackend: BackendUnderTest = {
  name: 'postgres',
  url: POSTGRES_URL,
  hint: 'pg_ctlcluster --skip-systemctl-redirect $(ls /etc/postgresql) main start',
};
export const mysqlBackend: BackendUnderTest = {
  name: 'mysql',
  url: MYSQL_URL,
  hint: 'start-stop-daemon --start --oknodo --background --exec /usr/sbin/mariadbd',
};
