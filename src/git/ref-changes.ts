import type { RefChange } from '../store/change-log.js';
import { GitCommandError } from './errors.js';
import type { RefMap } from './refs.js';
import type { GitRunner } from './runner.js';

/** Ancestry checks run at once: each is one short git process. */
const CHECKS_AT_ONCE = 4;

/**
 * The refs that differ between `before` and `after` (created, moved,
 * deleted), sorted by name, each moved ref checked for a force push: the
 * new commit does not descend from the old one. One `git merge-base
 * --is-ancestor` per moved ref (created and deleted refs need none), run
 * after the fetch, when both commits are in the mirror; an old commit the
 * mirror no longer has counts as forced.
 */
export async function refChanges(runner: GitRunner, gitDir: string, before: RefMap, after: RefMap, signal?: AbortSignal): Promise<RefChange[]> {
  const changes: RefChange[] = [];
  for (const [ref, sha] of after) {
    const old = before.get(ref);
    if (old !== sha) changes.push({ ref, before: old ?? null, after: sha, forced: false });
  }
  for (const [ref, sha] of before) if (!after.has(ref)) changes.push({ ref, before: sha, after: null, forced: false });
  changes.sort((a, b) => (a.ref < b.ref ? -1 : a.ref > b.ref ? 1 : 0));
  const moved = changes.filter((change) => change.before !== null && change.after !== null);
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < moved.length) {
      const change = moved[next++]!;
      change.forced = !(await isAncestor(runner, gitDir, change.before!, change.after!, signal));
    }
  };
  await Promise.all(Array.from({ length: Math.min(CHECKS_AT_ONCE, moved.length) }, worker));
  return changes;
}

async function isAncestor(runner: GitRunner, gitDir: string, ancestor: string, descendant: string, signal?: AbortSignal): Promise<boolean> {
  try {
    await runner.run([`--git-dir=${gitDir}`, 'merge-base', '--is-ancestor', '--end-of-options', ancestor, descendant], signal ? { signal } : {});
    return true;
  } catch (error) {
    // Exit 1: not an ancestor. Anything else (a missing object) says nothing more useful.
    if (error instanceof GitCommandError && error.exitCode !== null) return false;
    throw error;
  }
}
