import { GithubRequestError } from '../errors.js';
import type { RunContext } from '../run/context.js';
import { walk } from '../run/walk.js';
import { storedObjects } from '../store/deletions.js';
import { findCursor } from '../store/cursors.js';
import { recordFailureStep } from '../store/failures.js';
import { commitDeletions } from './deletions.js';
import { COLLABORATOR_ROWS, collaboratorsCollection, collaboratorsListedCursor, type Affiliation } from './collections.js';

/**
 * The collaborators stage. GitHub's collaborator objects do not say how a
 * user has access, so three lists are walked: `affiliation=all` (every
 * collaborator: what a plain `/collaborators` lists, stored with its JSON),
 * then `direct` and `outside` (small, marking those collaborators). Each is
 * walked whole on every run, conditionally on a sync (an unchanged list
 * answers 304, free). A list answered anew in this run says exactly who is
 * in it: the rows it left out (access removed) are dropped.
 *
 * Listing collaborators needs push access: without it (403, 404), a
 * failure is listed and the import goes on; the other two lists would be
 * refused the same way and are not asked for. A `direct` or `outside` list
 * refused (403, 404, or 422 where a host takes no such affiliation) is
 * listed as a failure too, its marks left as they were.
 */
export async function importCollaborators(ctx: RunContext): Promise<void> {
  if (!(await walkOrRecord(ctx, 'all', [403, 404]))) return;
  await Promise.all([walkOrRecord(ctx, 'direct', [403, 404, 422]), walkOrRecord(ctx, 'outside', [403, 404, 422])]);
}

/** Walks one list (see walkAndDropUnlisted); an answer of `refused` is listed as a failure of `collaborator`. Returns whether the walk ended. */
async function walkOrRecord(ctx: RunContext, affiliation: Affiliation, refused: readonly number[]): Promise<boolean> {
  try {
    await walkAndDropUnlisted(ctx, affiliation);
    return true;
  } catch (error) {
    if (!(error instanceof GithubRequestError) || error.status === null || !refused.includes(error.status)) throw error;
    const id = affiliation === 'all' ? 'collaborators' : `collaborators?affiliation=${affiliation}`;
    await ctx.commit([recordFailureStep(ctx.db, ctx.importId, ctx.run, { type: 'collaborator', id, error: error.message }, Date.now())]);
    return false;
  }
}

/**
 * Walks one list, then, when this run's walk had it answered anew (its
 * listed cursor is this run's: written with the pages, so a resumed run
 * knows it too), drops the rows of its type not written in this run.
 * Dropping again after a crash deletes nothing more.
 */
async function walkAndDropUnlisted(ctx: RunContext, affiliation: Affiliation): Promise<void> {
  await walk(ctx, collaboratorsCollection(ctx, affiliation));
  const listed = await findCursor(ctx.db, ctx.importId, collaboratorsListedCursor(affiliation));
  if (listed?.run !== ctx.run) return;
  await commitDeletions(ctx, await storedObjects(ctx.db, ctx.importId, { type: COLLABORATOR_ROWS[affiliation], notInRun: ctx.run }), `collaborators/${affiliation}`);
}
