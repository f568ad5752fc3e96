import type { Compilable } from 'kysely';
import { pageOf } from '../github/link.js';
import type { GithubResponse } from '../github/client.js';
import { GithubRequestError } from '../errors.js';
import { getCursor, startCursor, writeCursorStep, type Cursor } from '../store/cursors.js';
import type { RunContext } from './context.js';

/** GitHub's largest page. */
export const PER_PAGE = 100;
/** A page walk's watermark is its start by GitHub's clock, less this (answers may lag behind writes a little). */
const WATERMARK_SLACK_MS = 60_000;

/** What a page's items become: statements for the page's batch (after the guard). */
export type PageHandler = (items: any[]) => Promise<(Compilable | null)[]> | (Compilable | null)[];

/**
 * One list to walk. The first run walks it by page number (`fullQuery`,
 * pages fetched in parallel, each committed with its rows); later runs ask
 * only for what changed: by `since` (sorted by update, oldest first) where
 * GitHub offers it, else newest first until the watermark (`stopAt`).
 */
export interface Collection {
  /** The cursor's name, e.g. `issues` or `reviews/12`. */
  name: string;
  path: string;
  /** The first run's order: oldest first (created), so pages stay put while new items are added at the end. */
  fullQuery: Record<string, string>;
  /** Lists with `since` (issues, comments): how a sync asks for what changed. Also the way past GitHub's page cap. */
  sinceQuery?: Record<string, string>;
  /** Lists without `since`, newest first (pulls by update, events by id): where a sync stops. */
  newestFirst?: NewestFirst;
  /** The update time of an item (since walks move their window with it). */
  stamp?: (item: any) => string;
  /** Where a page walk that hit the page cap continues: the `since` of the rest (e.g. the newest created_at stored). */
  capSince?: () => Promise<string | null>;
  /** Called when the page cap stops a walk that has no way past it (events): the fallback, or a failure. */
  onCap?: () => Promise<void>;
  handle: PageHandler;
}

/** A list walked newest first: the watermark is the newest item's `valueOf`, kept in cursor field `field`. */
export interface NewestFirst {
  query: Record<string, string>;
  field: 'since' | 'lastId';
  valueOf: (item: any) => string;
  /** Whether `value` is older than (or the same as) the watermark: the walk stops there. */
  isOlder: (value: string, watermark: string) => boolean;
  /** The first run walks newest first too (events by id): its page 1 sets the watermark as well. */
  fullToo?: boolean;
}

/** Walks `collection` to its end, resuming from its cursor; returns the cursor as left. */
export async function walk(ctx: RunContext, collection: Collection): Promise<Cursor> {
  let cursor = startCursor(collection.name, ctx.run, await getCursor(ctx.db, ctx.importId, collection.name));
  if (cursor.done) return cursor;
  const newest = collection.newestFirst;
  if (newest && ctx.record.mode === 'sync') return newestFirstWalk(ctx, collection, cursor);
  if (cursor.walkSince !== null || (collection.sinceQuery && ctx.record.mode === 'sync' && cursor.since !== null)) return sinceWalk(ctx, collection, cursor);
  return pageWalk(ctx, collection, cursor);
}

/** Commits a page: its rows and the cursor after it, in one guarded batch. */
async function commitPage(ctx: RunContext, collection: Collection, items: any[], cursor: Cursor): Promise<void> {
  const steps = await collection.handle(items);
  await ctx.commit([...steps, writeCursorStep(ctx.db, ctx.importId, cursor, Date.now())]);
}

/** What the pages one walk has fetched or waiting to be stored may add up to (a page of pull requests is about 2 MB). */
const WALK_BYTES = 16 * 2 ** 20;

/**
 * Pages a walk fetches at once: the import's concurrency, fewer where pages
 * as large as its first would pass WALK_BYTES, so that the memory an import
 * needs depends on its concurrency, not on how many large pages a list has.
 */
function pagesAtOnce(concurrency: number, firstPageBytes: number): number {
  return Math.min(concurrency, Math.max(2, Math.floor(WALK_BYTES / Math.max(1, firstPageBytes))));
}

/**
 * By page number: page 1 tells the last page (Link), the rest go in
 * parallel (the client bounds requests in flight), each committed with its
 * rows as it arrives and recorded as done, so a resume fetches only pages
 * not done. A 422 beyond GitHub's page cap ends the page walk; the rest is
 * walked by `since` where the list has it.
 */
async function pageWalk(ctx: RunContext, collection: Collection, start: Cursor): Promise<Cursor> {
  let cursor = start;
  const query = { ...collection.fullQuery, per_page: String(PER_PAGE) };
  let width = ctx.concurrency;
  if (cursor.lastPage === null) {
    const first = await fetchPage(ctx, collection, { ...query, page: '1' }, null);
    width = pagesAtOnce(ctx.concurrency, first.bytes);
    const items = listOf(first);
    cursor = {
      ...cursor,
      lastPage: first.links.last ? pageOf(first.links.last) : 1,
      donePages: [1],
      since: githubTime(first.date - WATERMARK_SLACK_MS),
      // Where a sync asks the same first page (small lists, events), it asks conditionally with this.
      etag: first.etag ?? null,
      pages: 1,
      items: items.length,
      ...(collection.newestFirst?.fullToo && items.length > 0 ? { [collection.newestFirst.field]: collection.newestFirst.valueOf(items[0]) } : {}),
    };
    if (cursor.lastPage === 1) cursor.done = true;
    await commitPage(ctx, collection, items, cursor);
    if (cursor.done) return cursor;
  }
  const lastPage = cursor.lastPage!;
  const done = new Set(cursor.donePages);
  const todo: number[] = [];
  for (let page = 2; page <= lastPage; page++) if (!done.has(page)) todo.push(page);
  let capPage = Infinity;
  // Commits go one at a time, in arrival order: each writes the whole cursor as it then is.
  // A worker fetches on while they catch up, as long as the pages in flight and those not yet stored stay within `width`.
  let chain: Promise<void> = Promise.resolve();
  let unstored = 0;
  let fetching = 0;
  let failure: unknown;
  const next = (() => {
    let index = 0;
    return () => (index < todo.length && todo[index]! < capPage && failure === undefined ? todo[index++] : undefined);
  })();
  const worker = async (): Promise<void> => {
    for (let page = next(); page !== undefined; page = next()) {
      try {
        fetching += 1;
        const response = await fetchPage(ctx, collection, { ...query, page: String(page) }, null, true).finally(() => (fetching -= 1));
        if (response.status === 422) {
          capPage = Math.min(capPage, page);
          continue;
        }
        unstored += 1;
        chain = chain.then(() => {
          // Parsed only now (see the client): a page waiting here holds its bytes.
          const items = listOf(response);
          cursor = { ...cursor, donePages: [...cursor.donePages, page].sort((a, b) => a - b), pages: cursor.pages + 1, items: cursor.items + items.length };
          return commitPage(ctx, collection, items, cursor);
        });
        chain.then(
          () => (unstored -= 1),
          (error: unknown) => {
            unstored -= 1;
            failure ??= error;
          },
        );
        if (unstored + fetching >= width) await chain;
      } catch (error) {
        failure ??= error;
      }
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, Math.min(width, todo.length)) }, worker));
  await chain.catch(() => undefined);
  if (failure !== undefined) throw failure;
  if (capPage !== Infinity) {
    const since = collection.sinceQuery && collection.capSince ? await collection.capSince() : null;
    if (since !== null) {
      cursor = { ...cursor, walkSince: since, lastPage: 1 };
      await ctx.commit([writeCursorStep(ctx.db, ctx.importId, cursor, Date.now())]);
      return sinceWalk(ctx, collection, cursor);
    }
    await collection.onCap?.();
  }
  cursor = { ...cursor, done: true };
  await ctx.commit([writeCursorStep(ctx.db, ctx.importId, cursor, Date.now())]);
  return cursor;
}

/**
 * By `since` windows, oldest update first: one page at a time from the
 * window's start; the next window starts at the last item's update time
 * (items updated meanwhile move past the window, never before it, so
 * nothing is skipped; overlaps are de-duplicated by id). When a whole page
 * shares one time the window cannot move, and the walk goes on by page
 * within it. The first request of a sync is conditional (ETag): an
 * unchanged list answers 304, which costs nothing.
 */
async function sinceWalk(ctx: RunContext, collection: Collection, start: Cursor): Promise<Cursor> {
  let cursor = start;
  const stamp = collection.stamp ?? ((item: any) => String(item.updated_at));
  if (cursor.walkSince === null) cursor = { ...cursor, walkSince: cursor.since, lastPage: 1 };
  let newest = cursor.since;
  for (;;) {
    const since = cursor.walkSince!;
    const page = cursor.lastPage ?? 1;
    const firstOfSync = since === cursor.since && page === 1;
    const response = await fetchPage(ctx, collection, { ...collection.sinceQuery!, since, per_page: String(PER_PAGE), page: String(page) }, firstOfSync ? cursor.etag : null);
    if (response.status === 304) {
      cursor = { ...cursor, done: true, walkSince: null, lastPage: null };
      await ctx.commit([writeCursorStep(ctx.db, ctx.importId, cursor, Date.now())]);
      return cursor;
    }
    const items = listOf(response);
    const last = items.length > 0 ? stamp(items[items.length - 1]) : null;
    if (last !== null && (newest === null || last > newest)) newest = last;
    const more = items.length >= PER_PAGE;
    const moved = last !== null && last > since;
    cursor = {
      ...cursor,
      ...(firstOfSync ? { etag: response.etag ?? null } : {}),
      walkSince: more ? (moved ? last : since) : null,
      lastPage: more ? (moved ? 1 : page + 1) : null,
      pages: cursor.pages + 1,
      items: cursor.items + items.length,
      done: !more,
      ...(more ? {} : { since: newest }),
    };
    await commitPage(ctx, collection, items, cursor);
    if (!more) return cursor;
  }
}

/**
 * Newest first until the watermark: page 1 conditionally (304: nothing
 * changed), then on while every item of a page is newer than what the last
 * run saw. The new watermark (page 1's newest item) waits in `walkSince`
 * until the walk ends, so a resumed walk still stops at the old one.
 */
async function newestFirstWalk(ctx: RunContext, collection: Collection, start: Cursor): Promise<Cursor> {
  const spec = collection.newestFirst!;
  let cursor = start;
  const watermark = start[spec.field];
  for (let page = cursor.pages + 1; ; page++) {
    const response = await fetchPage(ctx, collection, { ...spec.query, per_page: String(PER_PAGE), page: String(page) }, page === 1 ? cursor.etag : null, true);
    const items = response.status === 304 || response.status === 422 ? [] : listOf(response);
    const newer = watermark === null ? items : items.filter((item) => !spec.isOlder(spec.valueOf(item), watermark));
    const end = newer.length < items.length || items.length < PER_PAGE || !response.links.next;
    const next = page === 1 && items.length > 0 ? spec.valueOf(items[0]) : cursor.walkSince;
    cursor = {
      ...cursor,
      ...(page === 1 && response.status !== 304 ? { etag: response.etag ?? null } : {}),
      walkSince: end ? null : next,
      ...(end && next !== null ? { [spec.field]: next } : {}),
      pages: cursor.pages + 1,
      items: cursor.items + newer.length,
      done: end,
    };
    await commitPage(ctx, collection, newer, cursor);
    if (end) return cursor;
  }
}

/** A time as GitHub writes them and reads `since`: `YYYY-MM-DDTHH:MM:SSZ`. */
function githubTime(ms: number): string {
  return new Date(Math.floor(ms / 1000) * 1000).toISOString().replace(/\.\d{3}Z$/, 'Z');
}

/**
 * GETs one page; a 422 is returned only when `capAllowed` (a page walk's
 * end), other non-2xx answers throw. 410 Gone (issues turned off for the
 * repository) and 409 (an empty repository) are lists with nothing in them.
 */
async function fetchPage(ctx: RunContext, collection: Collection, query: Record<string, string>, etag: string | null, capAllowed = false): Promise<GithubResponse> {
  const response = await ctx.client.get(collection.path, { query, etag });
  if (response.status === 304 || (response.status >= 200 && response.status < 300)) return response;
  if (response.status === 410 || response.status === 409) {
    ctx.logger.info({ event: 'import_list_empty', import: ctx.record.name, list: collection.name, status: response.status, reason: messageOf(response.data) }, `${collection.name}: ${messageOf(response.data)}`);
    return { ...response, status: 200, data: [], links: {} };
  }
  if (response.status === 422 && capAllowed) return response;
  throw new GithubRequestError(collection.path, response.status, messageOf(response.data));
}

function listOf(response: GithubResponse): any[] {
  return Array.isArray(response.data) ? response.data : [];
}

export function messageOf(data: unknown): string {
  return data && typeof data === 'object' && typeof (data as { message?: unknown }).message === 'string' ? (data as { message: string }).message : 'unexpected answer';
}
