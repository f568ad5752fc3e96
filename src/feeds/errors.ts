import { HOW_TO_DEFINE_FEED_SECRET } from '../credentials/errors.js';
import { ConflictError, InvalidInputError, NotFoundError } from '../errors.js';

/** No feed has this name. */
export class FeedNotFoundError extends NotFoundError {
  constructor(readonly feed: string) {
    super(`feed "${feed}" does not exist; see \`forgesync feed list\``);
  }
}

/** A feed of this name exists already. */
export class FeedNameTakenError extends ConflictError {
  constructor(readonly feed: string) {
    super(`feed "${feed}" exists already; remove it first or choose another name`);
  }
}

/** A name, pattern, batch size or sequence number given for a feed is not valid. */
export class InvalidFeedInputError extends InvalidInputError {}

/** A feed was given `secretEnv` (`--secret-env`), which named any environment variable: replaced by `secret`. */
export class SecretEnvReplacedError extends InvalidFeedInputError {
  constructor() {
    super(`secretEnv (--secret-env) was replaced by secret (--secret <name>), the name of a feed secret: ${HOW_TO_DEFINE_FEED_SECRET}`);
  }
}
