import { UnavailableError } from '../errors.js';

/** The upstream's LFS server did not answer a batch request usefully (an HTTP error, a body that is not the batch API's). */
export class LfsBatchError extends UnavailableError {
  constructor(
    /** The batch endpoint, without credentials. */
    readonly endpoint: string,
    readonly detail: string,
    /** The HTTP status, when the server answered. */
    readonly status?: number,
  ) {
    super(`the LFS server at ${endpoint} ${detail}`);
  }
}
