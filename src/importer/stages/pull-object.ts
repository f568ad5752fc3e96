import { setTimeout as sleep } from 'node:timers/promises';
import type { Compilable } from 'kysely';
import type { GithubResponse } from '../github/client-types.js';
import { GithubAnswerError, GithubAuthError, GithubRequestError } from '../errors.js';
import { PageBatch } from '../run/batch.js';
import { checkObject } from '../run/shape.js';
import { messageOf } from '../run/walk.js';
import { findCursor, startCursor, writeCursorStep } from '../store/cursors.js';
import { clearFailureStep, type ImportFailure } from '../store/failures.js';
import { objectsByNumber, type ObjectRow } from '../store/objects.js';
import type { ObjectWorkContext } from './object-work.js';

/*
 * A pull request's single object (`GET /repos/{o}/{r}/pulls/{n}`): the
 * fields GitHub's `/pulls` list leaves out (`merged`, `mergeable`,
 * `commits`, `additions`, `review_comments`, …). It is fetched by the pull
 * request's job (see object-work.ts: one job per pull request the run
 * wrote, every one on a full import, the changed ones on a sync) and stored
 * as the `pull_request` row: a superset of the list item, same id and
 * updated_at, so the change log records nothing for it twice.
 */

/** What GitHub's single pull request has and its list items lack. */
export const SINGLE_PULL_FIELDS = [
  'merged', 'mergeable', 'rebaseable', 'mergeable_state', 'merged_by', 'comments',
  'review_comments', 'maintainer_can_modify', 'commits', 'additions', 'deletions', 'changed_files',
] as const;

/**
 * How long after a first answer with `mergeable: null` (GitHub still
 * computing it in the background) the object is asked for once more. The
 * reviews are fetched meanwhile; the rest of the wait is spent asleep.
 */
export const MERGEABLE_RETRY_AFTER_MS = 1000;

/** The cursor that keeps the single object's ETag for the next sync's conditional GET. */
export const pullObjectCursor = (number: number) => `pull/${number}`;

/** The `pull_request` row of a pull request's JSON (the list item or the single object). */
export function pullRequestRow(pull: any, data: unknown = pull): ObjectRow {
  return { type: 'pull_request', key: String(pull.id), number: pull.number, state: pull.state, createdAt: pull.created_at, updatedAt: pull.updated_at, data };
}

/** Whether stored pull request JSON is GitHub's single object (not only a list item). */
export function isSinglePull(data: unknown): data is Record<string, unknown> {
  return data !== null && typeof data === 'object' && SINGLE_PULL_FIELDS.every((field) => field in data);
}

/**
 * What a list item of a sync stores: the item itself, unless the stored row
 * is the single object of the same version (same `updated_at`: a pull
 * request a sync lists again at its watermark). That one is kept, a superset
 * the list would only shrink, so the job's conditional GET may answer 304
 * and cost nothing. A newer item replaces it; its job fetches the object.
 */
export function listedPullData(item: Record<string, unknown>, stored: unknown): Record<string, unknown> {
  if (isSinglePull(stored) && stored.updated_at === item.updated_at) return { ...item, ...stored };
  return item;
}

/**
 * The single-object part of a pull request's job: `steps` store what was
 * answered (none when a conditional GET answered 304), or `failure` says why
 * not; `gone` when GitHub no longer has the pull request (its reviews are
 * not asked for then).
 */
export type PullObjectOutcome = { steps: (Compilable | null)[] } | { failure: ImportFailure; gone: boolean };

/**
 * Fetches pull request `number`'s single object and returns what stores it.
 * A sync asks conditionally (the ETag of the object stored last time), but
 * only when the stored row is that object: a 304 then leaves it as it is.
 * An open pull request answered with `mergeable: null` (GitHub computing it
 * in the background) is asked for once more, `whileWaiting` run first (the
 * reviews) and at least MERGEABLE_RETRY_AFTER_MS after the first answer:
 * GitHub says a later GET gives the value. A second null is stored as
 * answered, and so is the first answer when the second GET fails.
 */
export async function fetchPullObject(ctx: ObjectWorkContext, number: number, whileWaiting: () => Promise<void>): Promise<PullObjectOutcome> {
  const name = pullObjectCursor(number);
  const path = `${ctx.repoPath}/pulls/${number}`;
  const fail = (error: string): PullObjectOutcome => ({ failure: { type: 'pull_request', id: `#${number}`, error }, gone: false });
  const [stored] = await objectsByNumber(ctx.db, ctx.importId, 'pull_request', [number]);
  const cursor = startCursor(name, ctx.run, ctx.mode === 'sync' ? await findCursor(ctx.db, ctx.importId, name) : undefined);
  const etag = ctx.mode === 'sync' && stored && isSinglePull(JSON.parse(stored.data)) ? cursor.etag : null;
  let answer: GithubResponse;
  try {
    answer = await ctx.client.get(path, { etag });
    if (answer.status === 304) return { steps: [writeCursorStep(ctx.db, ctx.importId, { ...cursor, done: true }, Date.now())] };
    if (answer.status === 404) return { failure: { type: 'pull_request', id: `#${number}`, error: 'the pull request is gone (404)' }, gone: true };
    if (answer.status !== 200) throw new GithubRequestError(path, answer.status, messageOf(answer.data));
    checkObject(path, answer.data);
  } catch (error) {
    if (error instanceof GithubRequestError || error instanceof GithubAuthError || error instanceof GithubAnswerError) return fail(error.message);
    throw error;
  }
  let pull = answer.data as Record<string, any>;
  const expectedKey = stored?.key ?? String(pull.id);
  const isThisPull = (candidate: Record<string, any>) => candidate.number === number && String(candidate.id) === expectedKey;
  if (!isThisPull(pull)) return fail(`GitHub answered pull request #${String(pull.number)} (id ${String(pull.id)}) for #${number} (id ${expectedKey})`);
  const answeredAt = Date.now();
  await whileWaiting();
  if (pull.mergeable === null && pull.state === 'open') {
    const again = await askAgain(ctx, path, answeredAt);
    if (again && isThisPull(again.data as Record<string, any>)) {
      answer = again;
      pull = again.data as Record<string, any>;
    }
  }
  const batch = new PageBatch(ctx);
  batch.add(pullRequestRow(pull));
  const written = { ...cursor, done: true, etag: answer.etag ?? null, pages: cursor.pages + 1 };
  return { steps: [...(await batch.steps()), writeCursorStep(ctx.db, ctx.importId, written, Date.now()), clearFailureStep(ctx.db, ctx.importId, 'pull_request', `#${number}`)] };
}

/** The second GET of an object GitHub was still computing `mergeable` for, after the rest of the wait; undefined when it gave no object. */
async function askAgain(ctx: ObjectWorkContext, path: string, answeredAt: number): Promise<GithubResponse | undefined> {
  const wait = answeredAt + MERGEABLE_RETRY_AFTER_MS - Date.now();
  if (wait > 0) await sleep(wait, undefined, { signal: ctx.signal });
  try {
    const again = await ctx.client.get(path, {});
    if (again.status !== 200) return undefined;
    checkObject(path, again.data);
    return again;
  } catch (error) {
    if (error instanceof GithubRequestError || error instanceof GithubAuthError || error instanceof GithubAnswerError) return undefined;
    throw error;
  }
}
