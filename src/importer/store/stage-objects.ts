import { sql, type Compilable, type Kysely } from 'kysely';
import type { Schema } from '../../store/types.js';

/*
 * The import_objects reads and writes the stages make besides storing pages
 * (that upsert is in objects.ts): where a walk picks up, which issues the
 * per-issue event walks cover, the protected branches no longer protected,
 * and the fix-ups a page brings to rows stored earlier.
 */

/**
 * Inputs: import and type. Returns the newest `created_at` stored of that
 * type, or null when none is: where a `since` walk past the page cap picks
 * up (the list is ordered by creation, so nothing older is missing).
 */
export async function newestCreatedAt(db: Kysely<Schema>, importId: number, type: string): Promise<string | null> {
  const row = await db
    .selectFrom('import_objects')
    .select(sql<string | null>`max(created_at)`.as('newest'))
    .where('import_id', '=', importId)
    .where('type', '=', type)
    .executeTakeFirst();
  return row?.newest ?? null;
}

/**
 * Inputs: the import. Returns the oldest `created_at` of its stored issue
 * events, or null when none is: the repo-wide event list stops at its page
 * cap, and the issues created before this time get their events walked one
 * by one.
 */
export async function oldestEventCreatedAt(db: Kysely<Schema>, importId: number): Promise<string | null> {
  const oldest = await db
    .selectFrom('import_objects')
    .select(sql<string | null>`min(created_at)`.as('oldest'))
    .where('import_id', '=', importId)
    .where('type', '=', 'issue_event')
    .executeTakeFirst();
  return oldest?.oldest ?? null;
}

/**
 * Inputs: the import and a time (or null: no bound). Returns the numbers
 * (as the driver gives them) of its issues and pull request issues created
 * at or before that time, in number order: those whose events the per-issue
 * walks fetch, as the repo-wide list did not reach them.
 */
export async function issueNumbersCreatedBy(db: Kysely<Schema>, importId: number, createdBy: string | null) {
  return db
    .selectFrom('import_objects')
    .select('number')
    .where('import_id', '=', importId)
    .where('type', 'in', ['issue', 'pull_request_issue'])
    .$if(createdBy !== null, (query) => query.where('created_at', '<=', createdBy!))
    .orderBy('number')
    .execute();
}

/** Inputs: the import. Returns the names (keys) of its stored protected branches, to find those no longer protected. */
export async function protectedBranchNames(db: Kysely<Schema>, importId: number): Promise<string[]> {
  const stored = await db.selectFrom('import_objects').select('key').where('import_id', '=', importId).where('type', '=', 'protected_branch').execute();
  return stored.map((row) => row.key);
}

/**
 * The statement that drops the stored review requests of pull requests.
 * Inputs: the import and pull request numbers (at least one). Deletes their
 * pull_request_review_request rows, so the requests a page lists now
 * replace them (a review given removes its request).
 */
export function deleteReviewRequestsStep(db: Kysely<Schema>, importId: number, numbers: readonly number[]): Compilable {
  return db.deleteFrom('import_objects').where('import_id', '=', importId).where('type', '=', 'pull_request_review_request').where('number', 'in', [...numbers]);
}

/**
 * The statement that fills `merged_by` into a stored pull request. Inputs:
 * the import, the pull request's key and its JSON with `merged_by` added.
 * Stores that JSON as the row's data: the `/pulls` list does not carry
 * `merged_by`, a `merged` event does.
 */
export function storePullWithMergedByStep(db: Kysely<Schema>, importId: number, key: string, data: Record<string, unknown>): Compilable {
  return db.updateTable('import_objects').set({ data: JSON.stringify(data) }).where('import_id', '=', importId).where('type', '=', 'pull_request').where('key', '=', key);
}

/**
 * Inputs: the import. Returns the numbers of its stored pull requests whose
 * JSON is only the `/pulls` list item (no `mergeable_state`, a field of the
 * single object alone): stored before the importer asked for the object, or
 * whose object's GET failed. A sync asks for those too, once each, besides
 * the pull requests that changed.
 */
export async function pullNumbersWithoutObject(db: Kysely<Schema>, importId: number): Promise<number[]> {
  const rows = await db
    .selectFrom('import_objects')
    .select('number')
    .where('import_id', '=', importId)
    .where('type', '=', 'pull_request')
    .where('data', 'not like', '%"mergeable_state":%')
    .orderBy('number')
    .execute();
  return rows.map((row) => Number(row.number));
}
