import { parseMysqlUrl } from '../../leases/stores/mysql/url.js';

/**
 * The version a SQL lease backend reports, asked on one short-lived
 * connection (no pool, no table created): connecting is bounded by `timeoutMs`.
 */
export async function postgresVersion(url: string, timeoutMs: number): Promise<string> {
  const { default: pg } = await import('pg');
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: timeoutMs, query_timeout: timeoutMs });
  client.on('error', () => {}); // reported by the failed query or connect instead
  try {
    await client.connect();
    const { rows } = await client.query<{ version: string }>('select version() as version');
    return rows[0]!.version.split(' on ')[0]!;
  } finally {
    await client.end().catch(() => {});
  }
}

/** `MySQL 8.0.36` or `MariaDB 10.11.6` (MariaDB says so in its version string). */
export async function mysqlVersion(url: string, timeoutMs: number): Promise<string> {
  const { default: mysql } = await import('mysql2/promise');
  const { host, port, user, password, database } = parseMysqlUrl(url);
  const connection = await mysql.createConnection({ host, port, ...(user !== undefined ? { user } : {}), ...(password !== undefined ? { password } : {}), database, connectTimeout: timeoutMs });
  try {
    const [rows] = await connection.query({ sql: 'select version() as version', timeout: timeoutMs });
    const version = String((rows as { version: string }[])[0]?.version ?? 'unknown');
    return /mariadb/i.test(version) ? `MariaDB ${version.replace(/-MariaDB.*$/i, '')}` : `MySQL ${version}`;
  } finally {
    connection.destroy();
  }
}
