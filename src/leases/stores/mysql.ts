import { LeaseBackendUnavailableError } from '../errors.js';
import type { LeaseStore } from '../types.js';
import { redactUrl } from '../../util/redact.js';
import { PinnedSessions } from './mysql/pinned.js';
import { Sessions } from './mysql/sessions.js';
import * as sql from './mysql/sql.js';
import { MysqlStore } from './mysql/store.js';
import { ensureTable } from './mysql/table.js';
import { parseMysqlUrl } from './mysql/url.js';
import type { LeaseStoreOptions } from '../open.js';

// How the store works: mysql/store.ts.

/**
 * Connects to MySQL or MariaDB at `url` (`mysql://user[:pass]@host:port/db`
 * or `mariadb://…`), creates the `forgesync_leases` table if it is missing
 * (moving one of an earlier version to ENGINE=MEMORY), and returns a lease
 * store whose exclusion is `GET_LOCK` held on a connection pinned to each
 * lease (one server connection per held lease).
 *
 * Needs a direct connection to the server, not a proxy that multiplexes
 * sessions. Evicting a hung holder whose ttl ran out uses KILL, which works
 * without privileges when all processes share one database user.
 *
 * @throws LeaseBackendUnavailableError within about five seconds when the
 *   server is unreachable, refuses the credentials, lacks the database, or
 *   the table cannot be created; the URL in the message has its password redacted.
 * @throws UnsupportedLeaseUrlError for another scheme or a URL without database.
 */
export async function createMysqlStore(url: string, options: LeaseStoreOptions = {}): Promise<LeaseStore> {
  let pinned: PinnedSessions | undefined;
  const sessions = new Sessions(
    {
      ...parseMysqlUrl(url),
      multipleStatements: true, // one round trip for the rare paths; values stay placeholders
      supportBigNumbers: true,
      bigNumberStrings: true,
      timezone: 'Z', // DATETIME columns hold UTC_TIMESTAMP values
      connectTimeout: 5_000,
      enableKeepAlive: true,
      keepAliveInitialDelay: 10_000,
    },
    (session, reason) => pinned?.gone(session, reason),
    sql.sessionSetup(options.session),
  );
  pinned = new PinnedSessions(sessions);
  try {
    await ensureTable(sessions);
  } catch (cause) {
    sessions.close();
    throw new LeaseBackendUnavailableError('mysql', redactUrl(url), cause);
  }
  return new MysqlStore(sessions, pinned, redactUrl(url));
}
