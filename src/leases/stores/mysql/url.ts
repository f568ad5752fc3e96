import { UnsupportedLeaseUrlError } from '../../errors.js';
import { redactUrl } from '../../../util/redact.js';

export interface MysqlTarget {
  host: string;
  port: number;
  user: string | undefined;
  password: string | undefined;
  database: string;
}

/**
 * Reads `mysql://user[:pass]@host[:port]/db` (or `mariadb://`). Parsed here
 * rather than by mysql2 so that `mariadb:` is accepted and a missing database
 * is reported as a URL problem instead of a later "No database selected".
 */
export function parseMysqlUrl(url: string): MysqlTarget {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new UnsupportedLeaseUrlError(`malformed MySQL URL: ${redactUrl(url)}`);
  }
  if (!/^(mysql|mariadb):$/i.test(parsed.protocol)) {
    throw new UnsupportedLeaseUrlError(`not a MySQL URL: ${redactUrl(url)}`);
  }
  const database = decodeURIComponent(parsed.pathname.replace(/^\//, ''));
  if (!database || database.includes('/')) {
    throw new UnsupportedLeaseUrlError(
      `MySQL lease URL must name one database, as in mysql://user:pass@host:3306/db; got ${redactUrl(url)}`,
    );
  }
  return {
    host: parsed.hostname.replace(/^\[(.*)\]$/, '$1') || 'localhost',
    port: parsed.port ? Number(parsed.port) : 3306,
    user: parsed.username ? decodeURIComponent(parsed.username) : undefined,
    password: parsed.password ? decodeURIComponent(parsed.password) : undefined,
    database,
  };
}
