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
