import { EgressRefusedError } from '../egress/errors.js';
import { ConflictError, ForgesyncError, InvalidInputError, NotFoundError, UnavailableError } from '../errors.js';
import { LeaseBackendUnavailableError, LeaseExpiredError, LeaseLostError } from '../leases/errors.js';
import { isTransientDatabaseError } from '../store/errors.js';

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
    options?: ErrorOptions,
  ) {
    super(`GET ${path} failed${status ? ` (${status})` : ''}: ${detail}`, options);
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

/** `--wait` gave up: another process still held the import's lease when the timeout passed. */
export class ImportWaitTimeoutError extends ConflictError {
  constructor(
    readonly importName: string,
    /** The holder, as lease messages name it: `owner(pid)`. */
    readonly holder: string,
    readonly waitedMs: number,
  ) {
    super(`another process ("${holder}") is still running import ${importName} after waiting ${formatSeconds(waitedMs)} s; see forgesync import status ${importName}, or wait longer with --timeout`);
  }
}

/** Seconds with at most one decimal (1, 1.5, 600). */
function formatSeconds(ms: number): string {
  return String(Math.round(ms / 100) / 10);
}

/**
 * Whether an import's step or run that failed with `error` would go
 * through if tried again later, unchanged: a database that refused for a
 * while (see isTransientDatabaseError), a lease store that did not answer,
 * a GitHub that kept answering 5xx or dropping connections through every
 * retry of the request. Such a failure never ends an import: the step
 * tries again, and a run that still fails is resumed by the scheduler. (A
 * lost lease is no failure at all: the run stops and the new holder goes
 * on.) Everything else is permanent and fails the run
 * until someone resumes it: GitHub answering 404 for the repository
 * (GithubProjectNotFoundError), a credential refused (GithubAuthError) or
 * gone, an answer that cannot be imported (GithubAnswerError) or is too
 * large (GithubAnswerTooLargeError), a redirect the egress policy refuses,
 * any other 4xx, a stall, a bug.
 */
export function isTransientImportError(error: unknown): boolean {
  // Lost, whatever made it so (a renewal the database failed): the work is the new holder's now, not to be tried again.
  if (error instanceof LeaseLostError || error instanceof LeaseExpiredError) return false;
  if (isTransientDatabaseError(error)) return true;
  for (let current = error, depth = 0; current instanceof Error && depth < 8; current = current.cause, depth++) {
    if (current instanceof LeaseBackendUnavailableError) return true;
    if (current instanceof GithubRequestError && !(current instanceof GithubAnswerTooLargeError)) {
      if (current.status === null) return !(current.cause instanceof EgressRefusedError);
      return current.status >= 500 || current.status === 408;
    }
  }
  return false;
}
