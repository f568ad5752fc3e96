import { sql } from 'kysely';
import type { RunContext } from '../run/context.js';
import { recordFailureStep } from '../store/failures.js';

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
  const rows = await db
    .selectFrom('import_objects as o')
    .select(['o.number', 'o.comments', (eb) => eb.selectFrom('import_objects as n').select(sql<number>`count(*)`.as('c')).where('n.import_id', '=', importId).where('n.type', '=', 'note').whereRef('n.number', '=', 'o.number').as('imported')])
    .where('o.import_id', '=', importId)
    .where('o.type', 'in', ['issue', 'pull_request_issue'])
    .where('o.comments', 'is not', null)
    .execute();
  const differences: { type: string; id: string; error: string }[] = [];
  for (const row of rows) {
    const stated = Number(row.comments);
    const imported = Number(row.imported);
    if (stated !== imported) differences.push({ type: 'note', id: `#${row.number}`, error: `GitHub states ${stated} comments, ${imported} imported` });
  }
  const pulls = await db.selectFrom('import_objects').select(['number', 'data']).where('import_id', '=', importId).where('type', '=', 'pull_request').where('data', 'like', '%"review_comments":%').execute();
  if (pulls.length > 0) {
    const counted = await db.selectFrom('import_objects').select(['number', sql<number>`count(*)`.as('c')]).where('import_id', '=', importId).where('type', '=', 'diff_note').groupBy('number').execute();
    const byNumber = new Map(counted.map((row) => [Number(row.number), Number(row.c)]));
    for (const pull of pulls) {
      const stated = (JSON.parse(pull.data) as { review_comments?: unknown }).review_comments;
      const imported = byNumber.get(Number(pull.number)) ?? 0;
      if (typeof stated === 'number' && stated !== imported) differences.push({ type: 'diff_note', id: `#${pull.number}`, error: `GitHub states ${stated} review comments, ${imported} imported` });
    }
  }
  const now = Date.now();
  await ctx.commit([
    db.deleteFrom('import_failures').where('import_id', '=', importId).where('type', 'in', ['note', 'diff_note']).where('key', 'like', '#%'),
    ...differences.map((difference) => recordFailureStep(db, importId, ctx.run, difference, now)),
  ]);
  return differences.length;
}
