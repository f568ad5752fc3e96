import { ConflictError, InvalidInputError, NotFoundError } from '../errors.js';

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
