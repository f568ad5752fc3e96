import { InvalidInputError } from '../errors.js';

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
