import type { RunContext } from '../run/context.js';
import { recordFailureStep } from '../store/failures.js';
import { clearCountFailuresStep, diffNoteCounts, pullsStatingReviewComments, statedCommentCounts } from '../store/reconcile.js';

/**
 * Checks the counts GitHub states against what was imported: every issue's
 * and pull request's `comments` against its notes, and a pull request's
 * `review_comments` (when the stored JSON has it: the `/pulls` list does
 * not) against its diff notes. Each difference is listed as a failure of
 * the type that is short (`note #12: GitHub says 5, 4 imported`); the
 * previous check's list is replaced.
 */
export async function reconcile(ctx: RunContext): Promise<number> {
  const { db, importId } = ctx;
  const rows = await statedCommentCounts(db, importId);
  const differences: { type: string; id: string; error: string }[] = [];
  for (const row of rows) {
    const stated = Number(row.comments);
    const imported = Number(row.imported);
    if (stated !== imported) differences.push({ type: 'note', id: `#${row.number}`, error: `GitHub states ${stated} comments, ${imported} imported` });
  }
  const pulls = await pullsStatingReviewComments(db, importId);
  if (pulls.length > 0) {
    const byNumber = await diffNoteCounts(db, importId);
    for (const pull of pulls) {
      const stated = (JSON.parse(pull.data) as { review_comments?: unknown }).review_comments;
      const imported = byNumber.get(Number(pull.number)) ?? 0;
      if (typeof stated === 'number' && stated !== imported) differences.push({ type: 'diff_note', id: `#${pull.number}`, error: `GitHub states ${stated} review comments, ${imported} imported` });
    }
  }
  const now = Date.now();
  await ctx.commit([
    clearCountFailuresStep(db, importId),
    ...differences.map((difference) => recordFailureStep(db, importId, ctx.run, difference, now)),
  ]);
  return differences.length;
}
