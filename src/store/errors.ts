import { ConflictError, InvalidInputError, NotFoundError, UnavailableError } from '../errors.js';

/** The database URL names a scheme forgesync has no dialect for, or is malformed. */
export class UnsupportedDatabaseUrlError extends InvalidInputError {}

/** An option passed to openDatabase is invalid (e.g. a schema name PostgreSQL would mangle). */
export class InvalidDatabaseOptionError extends InvalidInputError {}

/** The database could not be opened or did not answer (refused, timeout, authentication, bad file). */
export class DatabaseUnavailableError extends UnavailableError {
  constructor(readonly dialect: string, readonly url: string, cause: unknown) {
    super(
      `${dialect} database at ${url} is unreachable: ${(cause as Error)?.message ?? String(cause)}; ` +
        'check the database URL, that the server is running and that the credentials are accepted',
      { cause },
    );
  }
}

/** A schema migration failed; the database is left at the last migration that succeeded. */
export class DatabaseMigrationError extends UnavailableError {
  constructor(readonly url: string, readonly migration: string | undefined, cause: unknown) {
    super(
      `migrating the database at ${url} failed${migration ? ` in migration "${migration}"` : ''}: ` +
        `${(cause as Error)?.message ?? String(cause)}; fix the cause and open the database again to resume`,
      { cause },
    );
  }
}

/** A source with this name is already registered. */
export class SourceExistsError extends ConflictError {
  constructor(readonly sourceName: string) {
    super(`a source named "${sourceName}" already exists; choose another name or update the existing source`);
  }
}

/** No source with this name (or id) is registered. */
export class SourceNotFoundError extends NotFoundError {
  constructor(readonly source: string | number) {
    super(
      typeof source === 'number'
        ? `no source with id ${source} exists; it may have been removed`
        : `no source named "${source}" (see: forgesync status)`,
    );
  }
}

/**
 * SQLSTATE codes of failures that say nothing about the statement itself:
 * the same statement, sent again a moment later, goes through. Connection
 * exceptions (class 08), a serialisation failure or deadlock (the loser of
 * a conflict), a lock or idle-transaction timeout, a statement cancelled by
 * statement_timeout, and a server shutting down, restarting or not yet
 * accepting connections.
 */
const TRANSIENT_SQLSTATES = new Set(['40001', '40P01', '55P03', '25P03', '57014', '57P01', '57P02', '57P03']);

/** Messages of node-postgres's pool and client for a connection that could not be had or went away (they carry no code). */
const TRANSIENT_DRIVER_MESSAGES = [
  'timeout exceeded when trying to connect',
  'connection terminated',
  'client has encountered a connection error and is not queryable',
];

/** Socket errors of a database server that is restarting, unreachable for a moment, or dropped the connection. */
const TRANSIENT_SOCKET_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'EPIPE', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH', 'EAI_AGAIN']);

/**
 * Whether `error` (or one of its causes) is a database failure that goes
 * away by itself — a pool with no free connection in time, a connection
 * the server ended (a restart, pg_terminate_backend, an idle-transaction
 * timeout), a serialisation failure, a deadlock, a lock, statement or busy
 * timeout (PostgreSQL, or SQLite's SQLITE_BUSY and SQLITE_LOCKED) — so the
 * write that met it is worth trying again after a pause. Anything else (a
 * constraint, a syntax error, a missing table) would fail the same way again.
 */
export function isTransientDatabaseError(error: unknown): boolean {
  for (let current = error, depth = 0; current instanceof Error && depth < 8; current = current.cause, depth++) {
    if (current instanceof DatabaseUnavailableError) return true;
    const code = (current as { code?: unknown }).code;
    if (typeof code === 'string') {
      if (code.startsWith('08') && code.length === 5) return true;
      if (TRANSIENT_SQLSTATES.has(code) || TRANSIENT_SOCKET_CODES.has(code)) return true;
      if (code.startsWith('SQLITE_BUSY') || code.startsWith('SQLITE_LOCKED')) return true;
    }
    const message = current.message.toLowerCase();
    if (TRANSIENT_DRIVER_MESSAGES.some((text) => message.includes(text))) return true;
  }
  return false;
}
