import { ConflictError, InvalidInputError, NotFoundError, UnavailableError } from '../errors.js';

/** A process given only some roles (the others run elsewhere) on a backend only this process can reach. */
export class SharedBackendsRequiredError extends InvalidInputError {
  constructor(
    readonly roles: string,
    /** What to set, one entry per embedded backend. */
    readonly missing: readonly string[],
  ) {
    super(
      `--role ${roles} runs part of forgesync, the rest in other processes, so they must share their backends: ${missing.join('; ')} ` +
        '(or run every role in one process: --role all, on the embedded defaults)',
    );
  }
}

/** No shard has this id (no worker ever registered it). */
export class ShardNotFoundError extends NotFoundError {
  constructor(readonly shard: string) {
    super(`no shard "${shard}": a worker registers its shard when it starts (FORGESYNC_SHARD); \`forgesync shard list\` shows those there are`);
  }
}

/** The shard cannot take sources now: draining, or its worker is not seen. */
export class ShardUnavailableError extends ConflictError {
  constructor(
    readonly shard: string,
    readonly state: string,
  ) {
    super(`shard "${shard}" is ${state} and takes no sources; pick an active one (\`forgesync shard list\`)${state === 'down' ? ', or start its worker' : ''}`);
  }
}

/** Draining a shard needs another active shard to move its sources to. */
export class NoOtherShardError extends ConflictError {
  constructor(readonly shard: string) {
    super(`cannot drain shard "${shard}": no other shard is active to take its sources; start a worker with another FORGESYNC_SHARD first`);
  }
}

/** Moving sources between shards needs jobs that reach each shard's workers. */
export class MovesNeedRoutedJobsError extends InvalidInputError {
  constructor() {
    super('moving sources between shards needs shared jobs that reach each shard\'s workers: set FORGESYNC_JOBS_URL=redis://… (BullMQ); with in-process jobs every source is synced where it is asked for');
  }
}

/** A source no shard holds yet: its files are nowhere to read. */
export class SourceNotPlacedError extends UnavailableError {
  override readonly shownToCallers = true;
  constructor(readonly source: string) {
    super(`source "${source}" is on no storage shard yet (no worker had registered one when it was added): start a worker (forgesync serve --role worker) and it is placed and synced`);
  }
}

/**
 * The worker holding a shard's files cannot be reached for a read. Its
 * message is shown to API callers, so it names the shard, never the
 * worker's internal address: that is in `endpoint`, which the server log
 * records with the error.
 */
export class ShardUnreachableError extends UnavailableError {
  override readonly shownToCallers = true;
  /** The internal endpoint that was tried, if any (for the log, not the message). */
  readonly endpoint: string | undefined;
  constructor(
    readonly shard: string,
    /** Why, e.g. `is down` or the connection error's code. */
    readonly reason: string,
    options: { endpoint?: string; cause?: unknown } = {},
  ) {
    super(
      `the files of shard "${shard}" cannot be read now: its worker ${reason}; \`forgesync shard list\` shows its state (start its worker, or drain the shard to move its sources)`,
      options.cause === undefined ? undefined : { cause: options.cause },
    );
    this.endpoint = options.endpoint;
  }
}

/** `shard drain --wait` gave up: sources are still moving off the shard. */
export class DrainTimeoutError extends ConflictError {
  constructor(
    readonly shard: string,
    readonly left: number,
    readonly timeoutMs: number,
  ) {
    super(`shard "${shard}" still holds ${left} sources after ${timeoutMs} ms; \`forgesync shard list\` shows the progress`);
  }
}
