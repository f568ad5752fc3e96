import type { ChangedFile, MirrorGit } from './mirror-git.js';
import { commitItem } from './payloads.js';
import type { GitDataRequest } from './request.js';

/*
 * What a comparison of two commits reads, shared by `/compare/{base}...{head}`
 * and a pull request's `/commits` and `/files` (GitHub lists both the same
 * way: the commits on the head's side, oldest first, and the files changed
 * from where the two histories meet to the head).
 */

/** The most commits GitHub lists for a comparison, and for a pull request. */
export const MAX_RANGE_COMMITS = 250;

/** Two commits compared, and their best common ancestor. */
export interface CommitRange {
  base: string;
  head: string;
  mergeBase: string;
}

/** The range from `base` to `head` (both commit ids); undefined when their histories share no commit. */
export async function rangeOf(git: MirrorGit, base: string, head: string): Promise<CommitRange | undefined> {
  const mergeBase = await git.mergeBase(base, head);
  return mergeBase === undefined ? undefined : { base, head, mergeBase };
}

/** The commits reachable from the head and not from the base, oldest first: the first 250 ids, and how many there are. */
export function rangeCommits(git: MirrorGit, range: CommitRange): Promise<{ shas: string[]; total: number }> {
  return git.between(range.base, range.head, MAX_RANGE_COMMITS);
}

/** The files changed from the merge base to the head, with their counts and patches. */
export function rangeFiles(git: MirrorGit, range: CommitRange): Promise<ChangedFile[]> {
  return git.changes(range.mergeBase, range.head);
}

/** Commits `shas` as GitHub lists them (`commit` items), in that order; ids that are no commit are left out. */
export async function commitItems(gitData: GitDataRequest, shas: string[]): Promise<Record<string, unknown>[]> {
  const { git, repo, userOf } = gitData;
  const commits = await Promise.all(shas.map((sha) => git.commit(sha)));
  return Promise.all(commits.flatMap((commit) => (commit ? [commitItem(repo, commit, userOf)] : [])));
}
