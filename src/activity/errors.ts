import { NotFoundError } from '../errors.js';

/** No failure group has this id now (its sources recovered, or the id is wrong). */
export class FailureGroupNotFoundError extends NotFoundError {
  constructor(readonly group: string) {
    super(`no failing sources are in group "${group}" now (they may have recovered); GET /api/activity/failures lists the groups`);
  }
}
