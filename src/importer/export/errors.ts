import { ConflictError, InvalidInputError, NotFoundError } from '../../errors.js';

/** No import has this name (names compare case-insensitively). */
export class ImportNotFoundError extends NotFoundError {
  constructor(readonly importName: string) {
    super(`no import is named ${JSON.stringify(importName)}; check the name (it is the one the import was created with, in any case)`);
  }
}

/** The export's target exists and holds something: an export never writes into, or over, existing files. */
export class ExportTargetNotEmptyError extends ConflictError {
  constructor(readonly target: string) {
    super(`${target} already exists and is not empty; name a new (or empty) directory with --to, or remove ${target} first`);
  }
}

/** The export's target exists and is a file (or another non-directory). */
export class ExportTargetNotDirectoryError extends ConflictError {
  constructor(readonly target: string) {
    super(`${target} already exists and is not a directory; name a new directory with --to`);
  }
}

/** The import has not stored its repository yet (its first stage has not run): there is nothing to export. */
export class ImportNotFetchedError extends ConflictError {
  constructor(readonly importName: string) {
    super(
      `import ${JSON.stringify(importName)} has not fetched its repository yet; ` +
        'let the import run until it has fetched the repository (its first stage), then export again',
    );
  }
}

/** An export option is out of range (records per file, batch size). Nothing was written. */
export class InvalidExportOptionError extends InvalidInputError {
  constructor(
    readonly option: string,
    readonly value: unknown,
    expected: string,
  ) {
    super(`${option} must be ${expected} (got ${JSON.stringify(value)})`);
  }
}

/** The repository's owner or name cannot be used as a path inside the archive (GitHub's names never look like this). */
export class UnsafeArchivePathError extends InvalidInputError {
  constructor(readonly segment: string) {
    super(
      `refusing to export: ${JSON.stringify(segment)} (the repository's owner or name) is not a safe directory name; ` +
        'expected letters, digits, ".", "-" or "_" only',
    );
  }
}
