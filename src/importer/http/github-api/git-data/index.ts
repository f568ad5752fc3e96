import type { ApiServer } from '../context.js';
import { commitRoutes } from './commit-routes.js';
import { contentRoutes } from './content-routes.js';
import { pullGitRoutes } from './pull-git-routes.js';
import { refRoutes } from './ref-routes.js';
import type { GitDataDeps } from './request.js';

export { answerBranch } from './ref-routes.js';
export { MirrorLocator, type GitDataSource } from './source.js';
export type { GitDataDeps } from './request.js';

/**
 * The repository's git data as GitHub serves it, read from the import's
 * mirror: branches, tags, refs, commits and comparisons, trees, blobs,
 * contents, the README and archives, and a pull request's commits and
 * files (see the files of this folder).
 */
export function gitDataRoutes(server: ApiServer, deps: GitDataDeps): void {
  refRoutes(server, deps);
  commitRoutes(server, deps);
  contentRoutes(server, deps);
  pullGitRoutes(server, deps);
}
