import { Migrator, sql, type Kysely } from 'kysely';
import { redactUrl } from '../util/redact.js';
import type { PoolLimits, SessionLimits } from '../util/database-sessions.js';
import { connectPostgres, connectSqlite, type Connection } from './connect.js';
import { ForgesyncError } from '../errors.js';
import { DatabaseMigrationError, UnsupportedDatabaseUrlError } from './errors.js';
import { migrationProvider } from './migrations/index.js';
import type { Schema } from './types.js';

/** The SQL dialects the registry store runs on. */
export type StoreDialect = 'sqlite' | 'postgres';

/** An open, migrated registry database. */
export interface Database {
  db: Kysely<Schema>;
  dialect: StoreDialect;
  /** Closes the connection or pool; idempotent. */
  close(): Promise<void>;
}

/** Options of openDatabase. */
export interface OpenDatabaseOptions {
  /**
   * PostgreSQL only: keep every table (and Kysely's migration tables) in
   * this schema, created if missing. Ignored for SQLite.
   */
  schema?: string;
  /** PostgreSQL only: limits every pooled session gets (see SessionLimits); unset: the server's own. Migrations run without them. */
  session?: SessionLimits;
  /** PostgreSQL only: the pool's size and connection wait (default DEFAULT_POOL). */
  pool?: PoolLimits;
}

/** Resolves when the database answers a trivial statement (`select 1`); rejects with what failed. */
export async function pingDatabase(database: Pick<Database, 'db'>): Promise<void> {
  await sql`select 1`.execute(database.db);
}

/** The dialect a database URL selects, or undefined for an unsupported scheme. */
export function databaseDialect(url: string): StoreDialect | undefined {
  const scheme = /^([a-z][a-z0-9+.-]*):/i.exec(url)?.[1]?.toLowerCase();
  if (scheme === 'sqlite') return 'sqlite';
  if (scheme === 'postgres' || scheme === 'postgresql') return 'postgres';
  return undefined;
}

/**
 * Opens the registry database named by `url` and migrates it to the latest
 * schema: `sqlite:<file>` (directory created; WAL, busy_timeout 5000,
 * foreign keys on) or `postgres://…` / `postgresql://…` (a pg pool).
 * Processes opening the same database at once are safe: one migrates while
 * the others wait, then find nothing left to do.
 *
 * @throws UnsupportedDatabaseUrlError for another scheme or a malformed URL.
 * @throws InvalidDatabaseOptionError for a schema name PostgreSQL would alter.
 * @throws DatabaseUnavailableError when the database cannot be opened or reached
 *   (the URL in the message has its password redacted).
 * @throws DatabaseMigrationError when a migration fails.
 */
export async function openDatabase(url: string, options: OpenDatabaseOptions = {}): Promise<Database> {
  const dialect = typeof url === 'string' ? databaseDialect(url.trim()) : undefined;
  if (!dialect) {
    throw new UnsupportedDatabaseUrlError(
      `database URL ${typeof url === 'string' && url.trim() ? `"${redactUrl(url)}"` : 'is empty and'} ` +
        'has no supported scheme; use sqlite:<path to file>, postgres://… or postgresql://…',
    );
  }
  const connection =
    dialect === 'sqlite' ? connectSqlite(url.trim()) : await connectPostgres(url.trim(), options.schema, { ...(options.session ? { session: options.session } : {}), ...(options.pool ? { pool: options.pool } : {}) });
  try {
    await migrate(connection, dialect, redactUrl(url));
  } catch (error) {
    await connection.close().catch(() => {});
    throw error;
  }
  let closing: Promise<void> | undefined;
  return {
    db: connection.db,
    dialect,
    close: () => (closing ??= connection.close()),
  };
}

async function migrate(connection: Connection, dialect: StoreDialect, shownUrl: string): Promise<void> {
  try {
    await connection.exclusive(async (db) => {
      const migrator = new Migrator({ db, provider: migrationProvider(dialect), migrationTableSchema: connection.migrationSchema });
      const { error, results } = await migrator.migrateToLatest();
      if (error) throw new DatabaseMigrationError(shownUrl, results?.find((r) => r.status === 'Error')?.migrationName, error);
    });
  } catch (error) {
    if (error instanceof ForgesyncError) throw error;
    throw new DatabaseMigrationError(shownUrl, undefined, error);
  }
}
