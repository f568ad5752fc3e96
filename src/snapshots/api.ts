import type { Snapshots } from './service.js';

/**
 * What the rest of forgesync may ask of the snapshots module: held
 * per-commit snapshots, files and trees read from a commit without
 * materialising it, the snapshots on disk and their budget. Every method is
 * documented where it is implemented (service.ts).
 */
export type SnapshotsApi = Pick<Snapshots, 'open' | 'release' | 'readAt' | 'readFileAt' | 'listTree' | 'list' | 'budget' | 'settled' | 'defaultHoldMs'>;

/** How a revision and a tree path are checked before git sees them (the GitHub-compatible API's git data checks its own the same way). */
export { isObjectId, validateRevision, validateTreePath } from './revision.js';
export { InvalidSnapshotRequestError } from './errors.js';
