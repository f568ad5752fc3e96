/**
 * What `feed status` reads from the change log to report a feed's lag:
 * the changes in a feed's scope after its cursor (how many, and when the
 * oldest was recorded), and when a given change was recorded. Read only.
 * The scope is matched in the database here (a LIKE condition); delivery
 * matches it in memory (scopeMatcher in ../scope.ts).
 */
import { sql, type Expression, type ExpressionBuilder, type Kysely, type SqlBool } from 'kysely';
import type { Schema } from '../../store/types.js';
import type { FeedScope } from '../scope.js';

/** A glob as a LIKE pattern with `\` as its escape character. */
function likePattern(glob: string): string {
  return glob.replace(/[\\%_]/g, '\\$&').replace(/\*/g, '%').replace(/\?/g, '_');
}

/**
 * The scope as a condition on `change_log` rows. LIKE ignores case on
 * SQLite's ASCII letters where the glob does not; names are unique
 * regardless of case, so at worst a count includes a name that differs
 * only in case.
 */
function scopeCondition(scope: FeedScope, eb: ExpressionBuilder<Schema, 'change_log'>): Expression<SqlBool> {
  const conditions: Expression<SqlBool>[] = [];
  if (scope.types) conditions.push(eb.or(scope.types.map((pattern) => sql<SqlBool>`change_log.type like ${likePattern(pattern)} escape '\\'`)));
  if (scope.sources !== null) conditions.push(sql<SqlBool>`change_log.scope like ${likePattern(scope.sources)} escape '\\'`);
  return conditions.length === 0 ? sql<SqlBool>`1 = 1` : eb.and(conditions);
}

/**
 * The changes in `scope` numbered above `afterSeq`: how many (`n`), and the
 * earliest time one was recorded (`oldest`, ms; null when there is none).
 * Staged changes must be numbered first (headSeq does), or they are missed.
 */
export async function changesInScopeAfter(db: Kysely<Schema>, scope: FeedScope, afterSeq: number): Promise<{ n: number; oldest: number | null }> {
  return db
    .selectFrom('change_log')
    .select([sql<number>`count(*)`.as('n'), sql<number | null>`min(recorded_at)`.as('oldest')])
    .where('seq', '>', afterSeq)
    .where((eb) => scopeCondition(scope, eb))
    .executeTakeFirstOrThrow();
}

/** When change `seq` was recorded (ms, as stored); undefined when it is no longer in the log. */
export async function changeRecordedAt(db: Kysely<Schema>, seq: number): Promise<number | string | undefined> {
  const row = await db.selectFrom('change_log').select('recorded_at').where('seq', '=', seq).executeTakeFirst();
  return row?.recorded_at;
}
