import { ConflictError, InvalidInputError, NotFoundError } from '../errors.js';

/** A ref, sha or path given by the caller is malformed or unsafe. */
export class InvalidSnapshotRequestError extends InvalidInputError {}

/** The ref does not exist in the mirror (nor upstream, for a fallback clone). */
export class RevisionNotFoundError extends NotFoundError {
  constructor(
    readonly sourceName: string,
    readonly revision: string,
  ) {
    super(`${JSON.stringify(revision)} is not a branch, tag or commit of ${sourceName} (try: forgesync snapshot ${sourceName} --ref ${revision} --sync)`);
  }
}

/** A path inside a commit does not exist there. */
export class PathNotFoundError extends NotFoundError {
  constructor(
    readonly sha: string,
    readonly path: string,
  ) {
    super(`${path} does not exist in commit ${sha}`);
  }
}

/** A path would lead out of the snapshot (`..`, an absolute path, or a symlink pointing outside). */
export class SnapshotPathEscapeError extends InvalidInputError {
  constructor(
    readonly path: string,
    reason: string,
  ) {
    super(`refusing ${JSON.stringify(path)}: ${reason}`);
  }
}

/** No snapshot hold has this handle (released already, expired and evicted, or never made). */
export class SnapshotHoldNotFoundError extends NotFoundError {
  constructor(readonly handle: string) {
    super(`no snapshot is held under ${JSON.stringify(handle)} (see: forgesync snapshot list)`);
  }
}

/** The snapshot was released; its path may be evicted at any time. */
export class SnapshotReleasedError extends ConflictError {
  constructor(readonly sha: string) {
    super(`the snapshot of ${sha} was released; open a new one`);
  }
}

/** There is no mirror to read from and none could be made in time. */
export class SnapshotUnavailableError extends ConflictError {}
