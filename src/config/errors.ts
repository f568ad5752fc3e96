import { InvalidInputError } from '../errors.js';

/** The configuration is invalid; `problems` lists every problem found, not just the first. */
export class ConfigError extends InvalidInputError {
  constructor(readonly problems: string[]) {
    super(`invalid configuration:\n${problems.map((problem) => `  - ${problem}`).join('\n')}`);
  }
}
