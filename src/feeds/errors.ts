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

/** A name, pattern, batch size, sequence number or environment variable given for a feed is not valid. */
export class InvalidFeedInputError extends InvalidInputError {}
