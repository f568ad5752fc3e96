import { sql, type Compilable, type Kysely } from 'kysely';
import type { Schema } from '../../store/types.js';

/*
 * The reads and the one write of the count check (stages/reconcile.ts): the
 * counts GitHub states on issues and pull requests, the notes and diff notes
 * imported for them, and the clearing of the previous check's failures.
 */

/**
 * Inputs: the import. Returns, for every issue and pull request issue whose
 * stored `comments` is set, that count and how many notes of its number are
 * stored (a correlated count: one indexed range read per issue, no join that
 * would multiply rows). Issues GitHub gave no count for are not checked.
 */
export async function statedCommentCounts(db: Kysely<Schema>, importId: number) {
  return db
    .selectFrom('import_objects as o')
    .select(['o.number', 'o.comments', (eb) => eb.selectFrom('import_objects as n').select(sql<number>`count(*)`.as('c')).where('n.import_id', '=', importId).where('n.type', '=', 'note').whereRef('n.number', '=', 'o.number').as('imported')])
    .where('o.import_id', '=', importId)
    .where('o.type', 'in', ['issue', 'pull_request_issue'])
    .where('o.comments', 'is not', null)
    .execute();
}

/**
 * Inputs: the import. Returns the stored pull requests (number and JSON
 * text) whose JSON has `review_comments`: the `/pulls` list does not give
 * it, so only these can be checked.
 */
export async function pullsStatingReviewComments(db: Kysely<Schema>, importId: number) {
  return db.selectFrom('import_objects').select(['number', 'data']).where('import_id', '=', importId).where('type', '=', 'pull_request').where('data', 'like', '%"review_comments":%').execute();
}

/**
 * Inputs: the import. Returns how many diff notes are stored per pull
 * request number, counted in one grouped read (read only when some pull
 * request states a count to check against).
 */
export async function diffNoteCounts(db: Kysely<Schema>, importId: number): Promise<Map<number, number>> {
  const counted = await db.selectFrom('import_objects').select(['number', sql<number>`count(*)`.as('c')]).where('import_id', '=', importId).where('type', '=', 'diff_note').groupBy('number').execute();
  return new Map(counted.map((row) => [Number(row.number), Number(row.c)]));
}

/**
 * The statement that clears the previous count check's failures. Inputs:
 * the import. Deletes its import_failures rows of type note / diff_note
 * keyed `#<number>` (the keys the check lists its differences under), so
 * the new list replaces the old one in the same transaction.
 */
export function clearCountFailuresStep(db: Kysely<Schema>, importId: number): Compilable {
  return db.deleteFrom('import_failures').where('import_id', '=', importId).where('type', 'in', ['note', 'diff_note']).where('key', 'like', '#%');
}
