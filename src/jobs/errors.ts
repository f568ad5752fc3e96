import { InvalidInputError, UnavailableError } from '../errors.js';

/** A job or a job kind is malformed (empty kind or key, bad concurrency, a payload that is not flat JSON). */
export class InvalidJobError extends InvalidInputError {}

/** FORGESYNC_JOBS_URL names a transport forgesync does not have. */
export class UnsupportedJobsUrlError extends InvalidInputError {}

/** The job queue's backend cannot be used: unreachable, or configured so that it could drop jobs' bookkeeping. */
export class JobBackendUnavailableError extends UnavailableError {}

/** The transport was closed; it takes no more jobs. */
export class JobTransportClosedError extends UnavailableError {
  constructor(detail = 'the job transport is closed') {
    super(detail);
  }
}
