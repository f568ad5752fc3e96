import { setTimeout as sleep } from 'node:timers/promises';
import BetterSqlite3 from 'better-sqlite3';
import { Kysely, PostgresDialect, SqliteDialect, type PostgresCursor, type PostgresPool, type PostgresPoolClient, type QueryResult, type SqliteDatabase } from 'kysely';
import { BUSY_TIMEOUT_MS, openSqliteFile, sqliteFilePath } from '../util/sqlite-url.js';
import { redactUrl } from '../util/redact.js';
import { SqliteReader } from './sqlite-reader.js';
import { postgresUrlWithLimits, surviveLostConnections, type PoolLimits, type SessionLimits } from '../util/database-sessions.js';
import { preparedStatementName } from './statement-names.js';
import { SqliteWriter } from './sqlite-writer.js';
import { DatabaseUnavailableError, InvalidDatabaseOptionError, UnsupportedDatabaseUrlError } from './errors.js';
import type { Schema } from './types.js';

/** An open Kysely instance plus what the migration step needs from its dialect. */
export interface Connection {
  db: Kysely<Schema>;
  /** Schema holding Kysely's migration tables (PostgreSQL), so other schemas' tables cannot fool it. */
  migrationSchema: string | undefined;
  /**
   * Runs `fn` with the database to migrate while holding a lock that
   * excludes every other process migrating the same database. Kysely's
   * migrator takes no lock on SQLite, so the SQLite connection holds
   * `BEGIN IMMEDIATE` around it; on PostgreSQL Kysely's own advisory lock
   * does the job, on a connection of its own without the session limits
   * (another process's migration may be waited for, and one may take long).
   */
  exclusive<T>(fn: (db: Kysely<Schema>) => Promise<T>): Promise<T>;
  /** Closes the connection (or pool) and what runs beside it. */
  close(): Promise<void>;
}

const MIGRATION_LOCK_WAIT_MS = 60_000;
const INT8_OID = 20;

/** Opens `sqlite:<file>`, creating its directory, with WAL and foreign keys on. */
export function connectSqlite(url: string): Connection {
  let file: string;
  try {
    file = sqliteFilePath(url);
  } catch (error) {
    throw new UnsupportedDatabaseUrlError((error as Error).message);
  }
  let raw: BetterSqlite3.Database;
  try {
    raw = openSqliteFile(file);
  } catch (error) {
    throw new DatabaseUnavailableError('sqlite', url, error);
  }
  const statements = cachingStatements(raw);
  const db = new Kysely<Schema>({ dialect: new SqliteDialect({ database: statements }) });
  // An in-memory database is this connection's alone: no other thread can write or read it.
  const writer = file === ':memory:' ? undefined : new SqliteWriter(file);
  const reader = file === ':memory:' ? undefined : new SqliteReader(file);
  sqliteHandles.set(db, {
    raw,
    prepare: (text) => statements.prepare(text) as BetterSqlite3.Statement,
    transaction: raw.transaction((run: () => unknown) => run()),
    writer,
    reader,
  });
  return {
    db,
    migrationSchema: undefined,
    exclusive: (fn) => withImmediateTransaction(raw, () => fn(db)),
    close: async () => {
      await writer?.close();
      await reader?.close();
      await db.destroy();
    },
  };
}

/**
 * The better-sqlite3 handle behind a SQLite Kysely instance, for the hot
 * statements that skip Kysely's executor (see sql.ts): `prepare` is the
 * statement cache Kysely's driver uses too, `transaction` runs a function
 * inside one transaction (`.immediate(fn)` for BEGIN IMMEDIATE).
 */
export interface SqliteHandle {
  raw: BetterSqlite3.Database;
  prepare(text: string): BetterSqlite3.Statement;
  transaction: BetterSqlite3.Transaction<(run: () => unknown) => unknown>;
  /** Runs runBatch's large guarded lists off the event loop (batch.ts; a file database only). */
  writer: SqliteWriter | undefined;
  /** Runs big reads off the event loop (a file database only; it sees committed rows only). */
  reader: SqliteReader | undefined;
}

const sqliteHandles = new WeakMap<Kysely<Schema>, SqliteHandle>();

/** The SQLite handle behind `db`, or undefined for another dialect. */
export function sqliteHandle(db: Kysely<Schema>): SqliteHandle | undefined {
  return sqliteHandles.get(db);
}

/** Runs one statement on the handle, synchronously, with the result shape of Kysely's SQLite driver. */
export function runOnSqlite<O>(sqlite: SqliteHandle, text: string, parameters: readonly unknown[]): QueryResult<O> {
  const statement = sqlite.prepare(text);
  if (statement.reader) return { rows: statement.all(parameters) as O[] };
  const { changes, lastInsertRowid } = statement.run(parameters);
  return { rows: [], numAffectedRows: BigInt(changes), insertId: BigInt(lastInsertRowid) };
}

/** Distinct SQL texts kept prepared; the registry issues a few dozen shapes. */
const STATEMENT_CACHE_SIZE = 256;

/**
 * Kysely prepares every query afresh, which on SQLite costs about as much
 * as running it. The registry repeats a small set of SQL texts, so keep
 * their prepared statements (better-sqlite3 statements are reusable, and
 * calls never overlap: the driver is synchronous).
 */
function cachingStatements(raw: BetterSqlite3.Database): SqliteDatabase {
  const cache = new Map<string, BetterSqlite3.Statement>();
  return {
    close: () => raw.close(),
    prepare(text: string) {
      let statement = cache.get(text);
      if (!statement) {
        statement = raw.prepare(text);
        if (cache.size >= STATEMENT_CACHE_SIZE) cache.delete(cache.keys().next().value!);
        cache.set(text, statement);
      }
      return statement;
    },
  };
}

/**
 * Takes SQLite's write lock without blocking the event loop (busy timeout 0
 * and an async retry, so two handles in one process cannot starve each
 * other), runs fn inside that transaction and commits, or rolls back on error.
 */
async function withImmediateTransaction<T>(raw: BetterSqlite3.Database, fn: () => Promise<T>): Promise<T> {
  const deadline = Date.now() + MIGRATION_LOCK_WAIT_MS;
  raw.pragma('busy_timeout = 0');
  try {
    for (let delay = 5; ; delay = Math.min(delay * 2, 200)) {
      try {
        raw.exec('BEGIN IMMEDIATE');
        break;
      } catch (error) {
        if ((error as { code?: string }).code !== 'SQLITE_BUSY' || Date.now() > deadline) throw error;
        await sleep(delay);
      }
    }
  } finally {
    raw.pragma(`busy_timeout = ${BUSY_TIMEOUT_MS}`);
  }
  try {
    const result = await fn();
    raw.exec('COMMIT');
    return result;
  } catch (error) {
    if (raw.inTransaction) raw.exec('ROLLBACK');
    throw error;
  }
}

/** The registry pool unless configured (FORGESYNC_DATABASE_POOL_SIZE, FORGESYNC_DATABASE_POOL_WAIT). */
export const DEFAULT_POOL: PoolLimits = { size: 10, waitMs: 5_000 };

/** PostgreSQL folds unquoted identifiers in search_path to lower case: accept only names that survive it. */
const SCHEMA_NAME = /^[a-z_][a-z0-9_]{0,62}$/;

/**
 * Opens a pool on `postgres://…` and checks that the server answers. With
 * `schema`, every pooled connection gets `search_path=<schema>` (merged into
 * the URL's `options` parameter); the schema is created by the migration step.
 * With `limits.session`, every pooled connection gets those limits the same
 * way (see SessionLimits), and `limits.pool` sizes the pool.
 * int8 columns arrive as JavaScript numbers (ids, epoch ms, counters all stay
 * below 2^53); fences are read through `cast(fence as text)` to stay exact.
 */
export async function connectPostgres(url: string, schema: string | undefined, limits: { session?: SessionLimits; pool?: PoolLimits } = {}): Promise<Connection> {
  if (schema !== undefined && !SCHEMA_NAME.test(schema)) {
    throw new InvalidDatabaseOptionError(
      `schema "${schema}" is not a valid schema name; use lower-case letters, digits and "_", not starting with a digit, at most 63 characters`,
    );
  }
  let connectionString: string;
  let migrationConnectionString: string;
  try {
    const extra = schema ? [`-c search_path=${schema}`] : [];
    connectionString = limits.session || schema ? postgresUrlWithLimits(url, limits.session, extra) : url;
    migrationConnectionString = schema ? postgresUrlWithLimits(url, undefined, extra) : url;
  } catch {
    throw new UnsupportedDatabaseUrlError(`database URL ${redactUrl(url)} is not a valid postgres:// URL`);
  }
  // Loaded only when a PostgreSQL registry is configured.
  const { default: pg } = await import('pg');
  const pool = new pg.Pool({
    connectionString,
    max: limits.pool?.size ?? DEFAULT_POOL.size,
    idleTimeoutMillis: 10_000,
    connectionTimeoutMillis: limits.pool?.waitMs ?? DEFAULT_POOL.waitMs,
    keepAlive: true,
    allowExitOnIdle: true,
    types: {
      getTypeParser: ((oid: number, format?: 'text' | 'binary') =>
        oid === INT8_OID && format !== 'binary' ? Number : pg.types.getTypeParser(oid, format)) as typeof pg.types.getTypeParser,
    },
  });
  surviveLostConnections(pool);
  // The texts of prepared queries go as named statements (parsed once per connection, see
  // statement-names.ts); anything else as Kysely sends it.
  const named: PostgresPool = {
    connect: async () => {
      const client = await pool.connect();
      return {
        query: ((text: string | PostgresCursor<unknown>, values?: readonly unknown[]) => {
          if (typeof text !== 'string') return client.query(text as never);
          const name = preparedStatementName(text);
          return name ? client.query({ name, text, values: values as unknown[] }) : client.query(text, values as unknown[]);
        }) as unknown as PostgresPoolClient['query'],
        release: (destroy?: boolean) => client.release(destroy),
      };
    },
    end: () => pool.end(),
  };
  const db = new Kysely<Schema>({ dialect: new PostgresDialect({ pool: named }) });
  let migrationSchema = schema;
  // Whether the server answers (and its schema), asked on a connection without the session
  // limits like the migrations: the pool's limits may be short enough to cancel even this.
  const probe = new pg.Client({ connectionString: migrationConnectionString, connectionTimeoutMillis: limits.pool?.waitMs ?? DEFAULT_POOL.waitMs });
  try {
    await probe.connect();
    const { rows } = await probe.query<{ schema: string | null }>('select current_schema() as schema');
    migrationSchema ??= rows[0]?.schema ?? 'public';
  } catch (error) {
    await db.destroy().catch(() => {});
    throw new DatabaseUnavailableError('postgres', redactUrl(url), error);
  } finally {
    await probe.end().catch(() => {});
  }
  return {
    db,
    migrationSchema,
    exclusive: async (fn) => {
      const migrationPool = new pg.Pool({ connectionString: migrationConnectionString, max: 1, connectionTimeoutMillis: MIGRATION_LOCK_WAIT_MS, allowExitOnIdle: true });
      surviveLostConnections(migrationPool);
      const migrationDb = new Kysely<Schema>({ dialect: new PostgresDialect({ pool: migrationPool }) });
      try {
        return await fn(migrationDb);
      } finally {
        await migrationDb.destroy();
      }
    },
    close: () => db.destroy(),
  };
}
