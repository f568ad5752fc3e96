import type pg from 'pg';

/**
 * How long forgesync's database sessions may keep others waiting, whoever
 * holds them: a process paused (SIGSTOP, a long GC), hung or cut off inside
 * a transaction keeps its locks until the server ends that transaction, and
 * its lease lapsing does not end it. These limits go on every session of
 * the PostgreSQL registry and of the PostgreSQL and MySQL/MariaDB lease
 * stores (see store/connect.ts, leases/stores/postgres.ts, leases/stores/mysql.ts).
 */
export interface SessionLimits {
  /** A transaction whose client sends nothing for this long is ended by the server (its locks freed); 0: never. */
  idleInTransactionTimeoutMs: number;
  /** A statement waits this long for a lock, then fails; 0: as long as it takes. */
  lockTimeoutMs: number;
  /** A statement runs this long at most, then fails; 0: no limit. */
  statementTimeoutMs: number;
}

/** Connections of one process's pool to the registry, and how long a query waits for one of them. */
export interface PoolLimits {
  size: number;
  waitMs: number;
}

/**
 * The limits' defaults for a lease ttl: a paused holder's transaction is
 * ended after a third of the ttl, before its lease can lapse (a lease lapses
 * two thirds to one ttl after its last heartbeat), so the next holder finds
 * the locks free; a lock is waited for half a ttl, long enough for such a
 * transaction to be ended rather than to fail the waiter first. At least a
 * second each: a busy event loop may leave a live transaction idle for a moment.
 */
export function sessionLimitsFor(leaseTtlMs: number): Pick<SessionLimits, 'idleInTransactionTimeoutMs' | 'lockTimeoutMs'> {
  return { idleInTransactionTimeoutMs: Math.max(1000, Math.floor(leaseTtlMs / 3)), lockTimeoutMs: Math.max(1000, Math.floor(leaseTtlMs / 2)) };
}

/**
 * `url` with the limits as PostgreSQL startup options (`-c name=value` in
 * the URL's `options` parameter, which node-postgres sends when it
 * connects: no statement per session), then the URL's own options (they
 * win: PostgreSQL takes the last value of a setting), then `extra`. A limit
 * of 0 is not sent (the server's or the role's setting stays): a pooler that
 * refuses startup options (pgbouncer without `ignore_startup_parameters =
 * options`) works with all three at 0 and the limits set on the role.
 */
export function postgresUrlWithLimits(url: string, limits: SessionLimits | undefined, extra: readonly string[] = []): string {
  const parsed = new URL(url);
  const settings: [string, number | undefined][] = [
    ['idle_in_transaction_session_timeout', limits?.idleInTransactionTimeoutMs],
    ['lock_timeout', limits?.lockTimeoutMs],
    ['statement_timeout', limits?.statementTimeoutMs],
  ];
  const ours = settings.flatMap(([name, ms]) => (ms ? [`-c ${name}=${ms}`] : []));
  const options = [...ours, parsed.searchParams.get('options'), ...extra].filter(Boolean).join(' ');
  if (options) parsed.searchParams.set('options', options);
  return parsed.toString();
}

/**
 * Keeps a pg pool's lost connections from crashing the process. node-postgres
 * emits 'error' on an idle client that dies (a server restart, a network
 * drop) through the pool, and on a checked-out client whose session the
 * server ended (a restart, pg_terminate_backend, an idle-in-transaction
 * timeout) on that client itself, after failing the query running on it:
 * unheard, either kills the process. The failed query's error is what callers
 * act on; the next query opens a new connection.
 */
export function surviveLostConnections(pool: pg.Pool): void {
  pool.on('error', () => {});
  pool.on('connect', (client) => client.on('error', () => {}));
}
