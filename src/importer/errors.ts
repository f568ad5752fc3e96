import { ConflictError, ForgesyncError, InvalidInputError, NotFoundError, UnavailableError } from '../errors.js';

/** No import has this name. */
export class ImportNotFoundError extends NotFoundError {
  constructor(readonly importName: string) {
    super(`no import is named ${JSON.stringify(importName)} (see: forgesync import list)`);
  }
}

/** The name is taken by an import of another project. */
export class ImportNameTakenError extends ConflictError {
  constructor(
    readonly importName: string,
    readonly project: string,
  ) {
    super(`import ${JSON.stringify(importName)} already imports ${project}; choose another one with --name`);
  }
}

/** `owner/repo`, a name, an API URL or a concurrency given by the caller is malformed. */
export class InvalidImportInputError extends InvalidInputError {}

/** The import is in a state the operation does not apply to (resume a synced import, sync one that never finished). */
export class ImportStateError extends ConflictError {
  constructor(
    readonly importName: string,
    readonly state: string,
    hint: string,
  ) {
    super(`import ${JSON.stringify(importName)} is ${state}: ${hint}`);
  }
}

/** GitHub refused the credential (401): the token is wrong, expired or revoked. */
export class GithubAuthError extends UnavailableError {
  constructor(
    readonly credential: string | null,
    readonly apiUrl: string,
  ) {
    super(
      credential
        ? `GitHub at ${apiUrl} refused credential ${JSON.stringify(credential)} (401 Bad credentials): renew its token in the secrets file or environment`
        : `GitHub at ${apiUrl} requires authentication (401): pass --credential NAME with a token bound to this host`,
    );
  }
}

/** A GitHub request kept failing (5xx, resets) through every retry, or answered an unexpected status. */
export class GithubRequestError extends ForgesyncError {
  constructor(
    readonly path: string,
    readonly status: number | null,
    detail: string,
  ) {
    super(`GET ${path} failed${status ? ` (${status})` : ''}: ${detail}`);
  }
}

/** An answer from the API host that cannot be stored as it is (an item that is not an object, an id that is not one, JSON nested too deep). */
export class GithubAnswerError extends ForgesyncError {
  constructor(
    readonly where: string,
    detail: string,
  ) {
    super(`the API host's answer for ${where} cannot be imported: ${detail}`);
  }
}

/**
 * An answer of the API host was longer than forgesync reads of one answer:
 * cut off there and not asked again (it would be as long). GitHub's pages
 * are a few MB at most; an API host that sends more is not serving GitHub's
 * pages, or means to exhaust forgesync's memory.
 */
export class GithubAnswerTooLargeError extends GithubRequestError {
  constructor(
    path: string,
    readonly maxBytes: number,
  ) {
    super(path, null, `the answer is larger than ${maxBytes} bytes (${Math.round(maxBytes / 2 ** 20)} MiB), the most forgesync reads of one API answer; not retried`);
  }
}

/** The project does not exist on GitHub, or the credential cannot see it. */
export class GithubProjectNotFoundError extends NotFoundError {
  constructor(
    readonly project: string,
    readonly apiUrl: string,
  ) {
    super(`${project} was not found at ${apiUrl}: check the name, and that the credential may read it (private repositories need one)`);
  }
}

/** A stage made no progress for the stall timeout; the import stays resumable. */
export class ImportStalledError extends ForgesyncError {
  constructor(
    readonly stage: string,
    readonly where: string,
    readonly stalledMs: number,
  ) {
    super(`stage ${stage} made no progress for ${Math.round(stalledMs / 1000)} s (${where}); run forgesync import resume to continue`);
  }
}
