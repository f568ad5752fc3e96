import pg from 'pg';
import { LeaseBackendUnavailableError, UnsupportedLeaseUrlError } from '../errors.js';
import { holderFromRow, type HolderColumns } from './holder-row.js';
import type { LeaseHolder, LeaseStore, StoreAcquireRequest, StoreAcquireResult, StoreExtendResult } from '../types.js';
import { redactUrl } from '../../util/redact.js';
import { postgresUrlWithLimits, surviveLostConnections } from '../../util/database-sessions.js';
import type { LeaseStoreOptions } from '../open.js';

/*
 * Leases live in one table and every operation is a single self-contained
 * statement judged by the server's clock. Nothing depends on session state
 * (no advisory locks, no open transactions), so any pooled connection will
 * do, and a crashed client leaves nothing behind but a row that expires.
 *
 * Rows are never deleted: release only clears token and expires_at, so the
 * fence of a key keeps growing across releases, crashes and restarts.
 *
 * now() is the start of the (single-statement) transaction. If a statement
 * waits on a row lock, now() is slightly in the past, which errs on the safe
 * side twice: an old lease is judged expired a little late, and a new lease
 * ends a little early.
 */

const TABLE = 'forgesync_leases';

const CREATE_TABLE = `CREATE TABLE IF NOT EXISTS ${TABLE} (
  key         text PRIMARY KEY,
  token       text,
  fence       bigint NOT NULL,
  owner_name  text,
  owner_pid   integer,
  owner_host  text,
  acquired_at timestamptz,
  expires_at  timestamptz
)`;

const HOLDER_COLUMNS = 'key, fence, owner_name, owner_pid, owner_host, acquired_at, expires_at';
const LIVE = 'token IS NOT NULL AND expires_at > now()';
const TTL = (param: string) => `now() + ${param}::float8 * interval '1 millisecond'`;

// Insert a fresh row, or take over a free/expired one; ON CONFLICT DO UPDATE
// re-checks its WHERE against the newest row version under a row lock, so of
// many concurrent contenders exactly one wins.
const TAKE = `INSERT INTO ${TABLE} AS l (key, token, fence, owner_name, owner_pid, owner_host, acquired_at, expires_at)
    VALUES ($1, $2, 1, $4, $5, $6, now(), ${TTL('$3')})
    ON CONFLICT (key) DO UPDATE SET
      token = excluded.token, fence = l.fence + 1,
      owner_name = excluded.owner_name, owner_pid = excluded.owner_pid, owner_host = excluded.owner_host,
      acquired_at = excluded.acquired_at, expires_at = excluded.expires_at
    WHERE l.token IS NULL OR l.expires_at <= now()`;

// Named statements: parsed and planned once per pooled connection.
// Losers read the live holder from the same statement (its snapshot), still
// one round trip.
const ACQUIRE = {
  name: 'forgesync_lease_acquire',
  text: `WITH ins AS (${TAKE}
    RETURNING ${HOLDER_COLUMNS})
  SELECT true AS acquired, * FROM ins
  UNION ALL
  SELECT false, ${HOLDER_COLUMNS} FROM ${TABLE}
  WHERE key = $1 AND ${LIVE} AND NOT EXISTS (SELECT 1 FROM ins)`,
};

// The same take-over for a caller that needs nothing on failure (tryAcquire):
// no holder read-back, and times as epoch milliseconds (a float parses far
// faster than a timestamptz).
const ACQUIRE_BARE = {
  name: 'forgesync_lease_acquire_bare',
  text: `${TAKE}
    RETURNING fence, extract(epoch FROM acquired_at)::float8 * 1000 AS acquired_ms,
      extract(epoch FROM expires_at)::float8 * 1000 AS expires_ms`,
};

// Extend only a live lease of ours; if that fails, tell an expired lease of
// ours (row still carries our token) from a lost one, in the same statement.
const EXTEND = {
  name: 'forgesync_lease_extend',
  text: `WITH upd AS (
    UPDATE ${TABLE} SET expires_at = ${TTL('$3')}
    WHERE key = $1 AND token = $2 AND expires_at > now()
    RETURNING expires_at)
  SELECT true AS extended, expires_at FROM upd
  UNION ALL
  SELECT false, expires_at FROM ${TABLE}
  WHERE key = $1 AND token = $2 AND expires_at <= now() AND NOT EXISTS (SELECT 1 FROM upd)`,
};

// Succeeds while the row still carries our token, even if the ttl has just
// run out: nobody else took the key (taking it replaces the token), so
// freeing it is harmless and tells the caller its lease ended cleanly.
const RELEASE = {
  name: 'forgesync_lease_release',
  text: `UPDATE ${TABLE} SET token = NULL, expires_at = NULL WHERE key = $1 AND token = $2`,
};

// Raise the fence of a live lease of ours to at least floor + 1 (never lower it); TAKE gives
// later holders l.fence + 1, so they continue above it. Values: key, token, floor (decimal
// text, exact as bigint). Returns the fence, or no row when the token does not hold the key
// (released, taken over, expired or deleted); then nothing changed.
const RAISE_FENCE = {
  name: 'forgesync_lease_raise_fence',
  text: `UPDATE ${TABLE} SET fence = GREATEST(fence, $3::bigint + 1)
  WHERE key = $1 AND token = $2 AND expires_at > now()
  RETURNING fence`,
};

const INSPECT = {
  name: 'forgesync_lease_inspect',
  text: `SELECT ${HOLDER_COLUMNS} FROM ${TABLE} WHERE key = $1 AND ${LIVE}`,
};

// LIKE with an escaped prefix rather than starts_with() (PostgreSQL 11+).
// Sorted in code point order (C collation), like the other backends.
const LIST = {
  name: 'forgesync_lease_list',
  text: `SELECT ${HOLDER_COLUMNS} FROM ${TABLE}
  WHERE key LIKE $1 ESCAPE '\\' AND ${LIVE} ORDER BY key COLLATE "C"`,
};

const FORCE_RELEASE = {
  name: 'forgesync_lease_force_release',
  text: `UPDATE ${TABLE} SET token = NULL, expires_at = NULL
  WHERE key = $1 AND ${LIVE} AND ($2::bigint IS NULL OR fence = $2::bigint)`,
};

interface HolderRow extends HolderColumns {
  key: string;
  fence: string; // int8 arrives as a string; BigInt keeps it exact
  acquired_at: Date;
  expires_at: Date;
}

const toHolder = (row: HolderRow): LeaseHolder => holderFromRow(row.key, row);

function likePrefix(prefix: string): string {
  return prefix.replace(/[\\%_]/g, (c) => `\\${c}`) + '%';
}

/**
 * Connects to PostgreSQL at `url` (`postgres://` or `postgresql://`), creates
 * the `forgesync_leases` table if it is missing, and returns a lease store
 * backed by it.
 *
 * Safe behind any connection pool, including pgbouncer in transaction mode
 * (which must then be 1.21+ with `max_prepared_statements` set, as the hot
 * statements are named prepared statements).
 *
 * @throws LeaseBackendUnavailableError within a few seconds when the server is
 *   unreachable, refuses the credentials, lacks the database, or the table
 *   cannot be created; the URL in the message has its password redacted.
 * @throws UnsupportedLeaseUrlError for another scheme.
 */
export async function createPostgresStore(url: string, options: LeaseStoreOptions = {}): Promise<LeaseStore> {
  if (!/^postgres(ql)?:\/\//i.test(url)) {
    throw new UnsupportedLeaseUrlError(`not a PostgreSQL URL: ${redactUrl(url)}`);
  }
  let pool: pg.Pool | undefined;
  try {
    pool = new pg.Pool({
      connectionString: options.session ? postgresUrlWithLimits(url, options.session) : url,
      max: options.pool?.size ?? 10,
      idleTimeoutMillis: 10_000,
      connectionTimeoutMillis: options.pool?.waitMs ?? 5_000,
      keepAlive: true,
      allowExitOnIdle: true,
    });
    surviveLostConnections(pool);
    await ensureTable(pool);
  } catch (cause) {
    await pool?.end().catch(() => {});
    throw new LeaseBackendUnavailableError('postgres', redactUrl(url), cause);
  }
  return new PostgresStore(pool);
}

/**
 * Creates the table unless it exists. The existence check comes first so a
 * role without CREATE on the schema can still use a table made by an admin;
 * the transaction-scoped advisory lock stops processes starting together from
 * racing on CREATE TABLE IF NOT EXISTS (which can fail with 23505 on pg_type).
 */
async function ensureTable(pool: pg.Pool): Promise<void> {
  const found = await pool.query<{ present: boolean }>(`SELECT to_regclass($1) IS NOT NULL AS present`, [TABLE]);
  if (found.rows[0]?.present) return;
  const client = await pool.connect();
  try {
    await client.query('BEGIN');
    await client.query(`SELECT pg_advisory_xact_lock(hashtext($1))`, [TABLE]);
    await client.query(CREATE_TABLE);
    await client.query('COMMIT');
  } catch (err) {
    await client.query('ROLLBACK').catch(() => {});
    throw err;
  } finally {
    client.release();
  }
}

class PostgresStore implements LeaseStore {
  readonly kind = 'postgres';
  private closing: Promise<void> | undefined;

  constructor(private readonly pool: pg.Pool) {}

  async acquire({ key, token, ttlMs, owner, withHolder }: StoreAcquireRequest): Promise<StoreAcquireResult> {
    const values = [key, token, ttlMs, owner.name, owner.pid, owner.host];
    if (!withHolder) {
      const { rows } = await this.pool.query<{ fence: string; acquired_ms: number; expires_ms: number }>({ ...ACQUIRE_BARE, values });
      const row = rows[0];
      if (!row) return { acquired: false, holder: null };
      return { acquired: true, fence: BigInt(row.fence), acquiredAt: new Date(row.acquired_ms), expiresAt: new Date(row.expires_ms) };
    }
    // A loser's snapshot may predate the winner's commit and show no live
    // holder; one retry usually names the holder (or finds the key free).
    for (let attempt = 0; ; attempt++) {
      const { rows } = await this.pool.query<HolderRow & { acquired: boolean }>({ ...ACQUIRE, values });
      const row = rows[0];
      if (row?.acquired) {
        return { acquired: true, fence: BigInt(row.fence), acquiredAt: row.acquired_at, expiresAt: row.expires_at };
      }
      if (row || attempt > 0) return { acquired: false, holder: row ? toHolder(row) : null };
    }
  }

  async extend(key: string, token: string, ttlMs: number): Promise<StoreExtendResult> {
    const { rows } = await this.pool.query<{ extended: boolean; expires_at: Date }>({
      ...EXTEND,
      values: [key, token, ttlMs],
    });
    const row = rows[0];
    if (!row) return { extended: false, reason: 'lost' };
    return row.extended ? { extended: true, expiresAt: row.expires_at } : { extended: false, reason: 'expired' };
  }

  async release(key: string, token: string): Promise<boolean> {
    const result = await this.pool.query({ ...RELEASE, values: [key, token] });
    return (result.rowCount ?? 0) > 0;
  }

  async raiseFence(key: string, token: string, floor: bigint): Promise<bigint | null> {
    const { rows } = await this.pool.query<{ fence: string }>({ ...RAISE_FENCE, values: [key, token, floor.toString()] });
    return rows[0] ? BigInt(rows[0].fence) : null;
  }

  async inspect(key: string): Promise<LeaseHolder | null> {
    const { rows } = await this.pool.query<HolderRow>({ ...INSPECT, values: [key] });
    return rows[0] ? toHolder(rows[0]) : null;
  }

  async list(prefix: string): Promise<LeaseHolder[]> {
    const { rows } = await this.pool.query<HolderRow>({ ...LIST, values: [likePrefix(prefix)] });
    return rows.map(toHolder);
  }

  async forceRelease(key: string, fence?: bigint): Promise<boolean> {
    const result = await this.pool.query({
      ...FORCE_RELEASE,
      values: [key, fence === undefined ? null : fence.toString()],
    });
    return (result.rowCount ?? 0) > 0;
  }

  async ping(): Promise<void> {
    await this.pool.query('SELECT 1');
  }

  /** Idempotent: pg.Pool#end throws when called twice. */
  close(): Promise<void> {
    this.closing ??= this.pool.end();
    return this.closing;
  }
}
