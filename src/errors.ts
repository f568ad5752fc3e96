/**
 * The four kinds of failure every module's errors belong to. Callers (the
 * HTTP server, the CLI, library users) decide by kind, with `instanceof`;
 * each module adds small subclasses with typed fields and a message that
 * says what to do.
 */

/** Base of every error forgesync raises on purpose; its message is meant for the user. */
export class ForgesyncError extends Error {
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = new.target.name;
  }
}

/** Something the caller named does not exist (HTTP 404). */
export class NotFoundError extends ForgesyncError {}

/** The request clashes with the current state: a name taken, a lease held by someone else (HTTP 409). */
export class ConflictError extends ForgesyncError {}

/** The caller's input is malformed, out of range or unsafe; nothing was stored (HTTP 400). */
export class InvalidInputError extends ForgesyncError {}

/** A backend or resource forgesync needs does not answer or refuses to work (HTTP 503). */
export class UnavailableError extends ForgesyncError {
  /**
   * Whether the HTTP API may show the message: false by default, since a
   * backend's error can name internal hosts; true for messages written to
   * be shown (a shard that is down, say).
   */
  readonly shownToCallers: boolean = false;
}

/** The HTTP status of an error's kind; undefined for anything that is not a ForgesyncError of a kind. */
export function statusOfError(error: unknown): number | undefined {
  if (error instanceof NotFoundError) return 404;
  if (error instanceof ConflictError) return 409;
  if (error instanceof InvalidInputError) return 400;
  if (error instanceof UnavailableError) return 503;
  return undefined;
}
