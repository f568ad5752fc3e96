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

/**
 * Holding one more snapshot would make the snapshots that holds keep from
 * eviction exceed FORGESYNC_SNAPSHOT_MAX_BYTES. Nothing was made or held.
 */
export class SnapshotBudgetExceededError extends ConflictError {
  constructor(
    readonly sourceName: string,
    readonly sha: string,
    /** The snapshot's size (as git stores its files). */
    readonly bytes: number,
    /** What the snapshots held now take. */
    readonly heldBytes: number,
    readonly maxBytes: number,
  ) {
    super(
      `cannot hold ${sourceName}@${sha}: it takes ${formatBytes(bytes)} and held snapshots already take ${formatBytes(heldBytes)} ` +
        `of the ${formatBytes(maxBytes)} FORGESYNC_SNAPSHOT_MAX_BYTES allows; release holds you no longer need ` +
        `(forgesync snapshot list, then forgesync snapshot release <handle>; API callers: DELETE /api/snapshots/<handle>) ` +
        'or raise FORGESYNC_SNAPSHOT_MAX_BYTES',
    );
  }
}

/** `512 B`, `1.5 MiB (1572864 B)`: readable, and exact where rounding would hide a difference. */
export function formatBytes(bytes: number): string {
  const units = ['KiB', 'MiB', 'GiB', 'TiB'];
  if (bytes < 1024) return `${bytes} B`;
  let value = bytes;
  let unit = '';
  for (const next of units) {
    if (value < 1024) break;
    value /= 1024;
    unit = next;
  }
  const rounded = Number.isInteger(value) ? String(value) : value.toFixed(1);
  return Number.isInteger(value) ? `${rounded} ${unit}` : `${rounded} ${unit} (${bytes} B)`;
}
