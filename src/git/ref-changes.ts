import type { RefChange } from '../store/change-log.js';
import { GitCommandError } from './errors.js';
import type { RefMap } from './refs.js';
import type { GitRunner } from './runner.js';

/** Ancestry checks run at once: each is one short git process. */
const CHECKS_AT_ONCE = 4;

/**
 * The refs that differ between `before` and `after` (created, moved,
 * deleted), sorted by name, each moved ref checked for a force push: the
 * new commit does not descend from the old one. The fetch that moved them
 * says so in its summary (`fetchLines`: `old...new` for a forced update,
 * `old..new` for a fast-forward); a moved ref it did not mention costs one
 * `git merge-base --is-ancestor`, run when both commits are in the mirror
 * (an old commit the mirror no longer has counts as forced).
 */
export async function refChanges(runner: GitRunner, gitDir: string, before: RefMap, after: RefMap, signal?: AbortSignal, fetchLines: readonly string[] = []): Promise<RefChange[]> {
  const told = fetchVerdicts(fetchLines);
  const changes: RefChange[] = [];
  for (const [ref, sha] of after) {
    const old = before.get(ref);
    if (old !== sha) changes.push({ ref, before: old ?? null, after: sha, forced: false });
  }
  for (const [ref, sha] of before) if (!after.has(ref)) changes.push({ ref, before: sha, after: null, forced: false });
  changes.sort((a, b) => (a.ref < b.ref ? -1 : a.ref > b.ref ? 1 : 0));
  const moved: RefChange[] = [];
  for (const change of changes) {
    if (change.before === null || change.after === null) continue;
    const verdict = told.find((entry) => change.before!.startsWith(entry.old) && change.after!.startsWith(entry.new));
    if (verdict) change.forced = verdict.forced;
    else moved.push(change);
  }
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

/** The fetch summary's `old..new` (fast-forward) and `old...new` (forced) pairs of abbreviated ids (git runs with LC_ALL=C). */
function fetchVerdicts(lines: readonly string[]): { old: string; new: string; forced: boolean }[] {
  const verdicts: { old: string; new: string; forced: boolean }[] = [];
  for (const line of lines) {
    const match = /^ [+ ] ([0-9a-f]{4,})(\.{2,3})([0-9a-f]{4,}) /.exec(line);
    if (match) verdicts.push({ old: match[1]!, new: match[3]!, forced: match[2] === '...' });
  }
  return verdicts;
}

/** Whether a line of `git fetch`'s stderr is one of its ref update lines (what {@link refChanges} reads). */
export function isFetchSummaryLine(line: string): boolean {
  return /^ [+ ] [0-9a-f]{4,}\.{2,3}[0-9a-f]{4,} /.test(line);
}
