import type { FastifyReply, FastifyRequest } from 'fastify';
import { writeStamp } from '../../store/list-memo.js';
import type { ApiDatabase, ListResult } from '../../store/read-api.js';
import { SizedLru } from '../../../util/sized-lru.js';
import type { RepoContext } from './context.js';
import { linkHeader, type Page } from './pagination.js';
import { prepareJson, sendPrepared, type PreparedJson } from './respond.js';

/*
 * Remembered list answers: a list page rendered once (its rows parsed, their
 * links pointed at the copy, the JSON text and its ETag made) is answered
 * again as it is while the import has not written since (its write stamp,
 * list-memo.ts) — what the same request would compute anew, byte for byte.
 * The key is everything the answer depends on: the import and its stamp,
 * the copy's base the links point at (scheme, host, FORGESYNC_PUBLIC_URL),
 * and the request's path and query. Who may read the import is checked
 * before (repoContext), on every request. Per process and database,
 * bounded in bytes, the least recently used forgotten first.
 */

/** The bytes of JSON text remembered per database (per process). */
const MAX_BYTES = 64 * 1024 * 1024;
/** An answer larger than this (a few thousand items) is not remembered. */
const MAX_ANSWER_BYTES = 4 * 1024 * 1024;

interface Remembered {
  json: PreparedJson;
  link: string | undefined;
}

/** Each database's remembered answers. */
const byDatabase = new WeakMap<object, SizedLru<Remembered>>();

function answersOf(database: ApiDatabase): SizedLru<Remembered> {
  let found = byDatabase.get(database.db);
  if (!found) byDatabase.set(database.db, (found = new SizedLru({ maxBytes: MAX_BYTES, maxEntryBytes: MAX_ANSWER_BYTES, sizeOf: (answer) => answer.json.body.length })));
  return found;
}

/** One page of a list as its handler computes it: the rendered items, the list's total and the page. */
export interface ListAnswer {
  items: unknown[];
  total: number;
  page: Page;
}

/**
 * Answers a list request from the remembered answer when the import has not
 * written since it was made, else from `compute` (and remembers it). Inputs:
 * the database, request, reply, the import's context and the handler's
 * computation. Errors `compute` throws (404, 422) are answered as they are
 * and never remembered.
 */
export async function sendListAnswer(
  database: ApiDatabase,
  request: FastifyRequest,
  reply: FastifyReply,
  context: RepoContext,
  compute: () => Promise<ListAnswer>,
): Promise<FastifyReply> {
  const answers = answersOf(database);
  const key = `${context.imported.id} ${await writeStamp(database, context.imported.id)} ${context.base} ${request.url}`;
  let answer = answers.get(key);
  if (!answer) {
    const { items, total, page } = await compute();
    answer = { json: prepareJson(items), link: linkHeader(context.origin, request.url, page, total) };
    answers.set(key, answer);
  }
  return sendPrepared(request, reply, answer.json, answer.link);
}

/** A page of stored objects as a list answer: each rendered for the request (then `map`ped), with the list's total. */
export function renderedPage(context: RepoContext, result: ListResult, page: Page, map?: (item: Record<string, unknown>) => Record<string, unknown>): ListAnswer {
  return { items: result.data.map((data) => (map ? map(context.render(data)) : context.render(data))), total: result.total, page };
}

/** A list answer sent as computed, not remembered (one that depends on more than the stored data, such as the time). */
export function sendItemsOf(request: FastifyRequest, reply: FastifyReply, context: RepoContext, answer: ListAnswer): FastifyReply {
  return sendPrepared(request, reply, prepareJson(answer.items), linkHeader(context.origin, request.url, answer.page, answer.total));
}
