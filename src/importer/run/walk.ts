import type { Compilable } from 'kysely';
import type { BodyMeter } from '../../egress/body.js';
import { pageOf } from '../github/link.js';
import type { GithubResponse } from '../github/client-types.js';
import { GithubRequestError } from '../errors.js';
import { findCursor, isPageDone, startCursor, withPageDone, writeCursorStep, type Cursor } from '../store/cursors.js';
import type { RunContext } from './context.js';
import { listItems } from './shape.js';
import type { PageHold } from './page-budget.js';

/** GitHub's largest page. */
export const PER_PAGE = 100;
/** A page walk's watermark is its start by GitHub's clock, less this (answers may lag behind writes a little). */
const WATERMARK_SLACK_MS = 60_000;

/** How a page was answered, for handlers whose rows depend on it. */
export interface PageAnswer {
  /**
   * A conditional request answered 304 (a newest-first list unchanged since the last run): the
   * items are none, and what the list gave last time still holds. (A since walk's 304 stores its
   * cursor only.)
   */
  notModified: boolean;
}

/** What a page's items become: statements for the page's batch (after the guard). */
export type PageHandler = (items: any[], answer: PageAnswer) => Promise<(Compilable | null)[]> | (Compilable | null)[];

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
  let cursor = startCursor(collection.name, ctx.run, await findCursor(ctx.db, ctx.importId, collection.name));
  if (cursor.done) return cursor;
  const newest = collection.newestFirst;
  if (newest && ctx.record.mode === 'sync') return newestFirstWalk(ctx, collection, cursor);
  if (cursor.walkSince !== null || (collection.sinceQuery && ctx.record.mode === 'sync' && cursor.since !== null)) return sinceWalk(ctx, collection, cursor);
  return pageWalk(ctx, collection, cursor);
}

/** Commits a page: its rows and the cursor after it, in one guarded batch. */
async function commitPage(ctx: RunContext, collection: Collection, items: any[], cursor: Cursor, answer: PageAnswer = { notModified: false }): Promise<void> {
  const steps = await collection.handle(items, answer);
  await ctx.commit([...steps, writeCursorStep(ctx.db, ctx.importId, cursor, Date.now())]);
}

/**
 * The most pages a walk takes by number, in parallel. GitHub serves a list
 * by page number up to a few hundred pages (past that it answers 422, the
 * page cap), so a `last` page beyond this in page 1's Link is no number
 * GitHub gives: it is not believed and nothing is planned from it; the walk
 * goes on page by page instead, following `next` links (or by `since` where
 * the list has it), and says so. 1,000 pages (100,000 items) leaves room
 * above any cap GitHub has had, and bounds what a cursor records of pages
 * done out of order.
 */
export const PAGE_WALK_MAX = 1000;

/**
 * By page number: page 1 tells the last page (Link), the rest go in
 * parallel (the client bounds requests in flight), each committed with its
 * rows as it arrives and recorded as done, so a resume fetches only pages
 * not done. A page without a `next` link ends the list early. A 422 beyond
 * GitHub's page cap ends the page walk; the rest is walked by `since` where
 * the list has it. A last page past PAGE_WALK_MAX: see pastTheBound.
 */
async function pageWalk(ctx: RunContext, collection: Collection, start: Cursor): Promise<Cursor> {
  let cursor = start;
  const query = { ...collection.fullQuery, per_page: String(PER_PAGE) };
  // What a page of this list is expected to bring: the largest seen (pages are asked for while those expected fit the run's PageBudget).
  let expected = 0;
  if (cursor.lastPage === null) {
    ({ cursor, expected } = await walkFirstPage(ctx, collection, cursor, query));
    if (cursor.done) return cursor;
  }
  // A cursor stored before the bound (or by a walk that believed too much) is bounded as it is read.
  cursor = believeLastPage(cursor);
  if (cursor.claimedLast !== null) return pastTheBound(ctx, collection, cursor, query);
  const walked = await walkPagesInParallel(ctx, collection, { start: cursor, query, expected });
  cursor = walked.cursor;
  if (walked.capped) {
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

/** A page walk's page 1: the last page it claims, the watermark, its rows; the cursor after it, and the bytes a page is expected to bring. */
async function walkFirstPage(ctx: RunContext, collection: Collection, start: Cursor, query: Record<string, string>): Promise<{ cursor: Cursor; expected: number }> {
  // Page 1 counts in the run's page budget until stored, like every page a walk reads in parallel.
  const firstHold = await ctx.pages.open();
  try {
    const first = await fetchPage(ctx, collection, { ...query, page: '1' }, null, false, firstHold);
    firstHold.read();
    const items = listOf(collection, first);
    const claimed = first.links.last ? pageOf(first.links.last) : 1;
    let cursor: Cursor = {
      ...start,
      lastPage: claimed,
      doneThrough: 1,
      donePages: [],
      since: githubTime(first.date - WATERMARK_SLACK_MS),
      // Where a sync asks the same first page (small lists, events), it asks conditionally with this.
      etag: first.etag ?? null,
      pages: 1,
      items: items.length,
      ...(collection.newestFirst?.fullToo && items.length > 0 ? { [collection.newestFirst.field]: collection.newestFirst.valueOf(items[0]) } : {}),
    };
    cursor = believeLastPage(cursor);
    // One page (no `last`), or a page 1 that says it is the end (no `next`, or nothing in it) whatever it claims.
    if ((cursor.lastPage === 1 && cursor.claimedLast === null) || !first.links.next || items.length === 0) cursor.done = true;
    await commitPage(ctx, collection, items, cursor);
    return { cursor, expected: first.bytes };
  } finally {
    firstHold.release();
  }
}

/**
 * The pages after page 1 not yet done, fetched in parallel and committed one at a time in arrival order;
 * `capped` when GitHub answered 422 (its page cap) for one of them.
 */
async function walkPagesInParallel(ctx: RunContext, collection: Collection, options: { start: Cursor; query: Record<string, string>; expected: number }): Promise<{ cursor: Cursor; capped: boolean }> {
  const { query } = options;
  let { expected } = options;
  let cursor = options.start;
  const width = ctx.concurrency;
  const lastPage = cursor.lastPage!;
  const doneAtStart = cursor;
  let nextPage = cursor.doneThrough + 1;
  let capPage = Infinity;
  let endPage = lastPage;
  // Commits go one at a time, in arrival order: each writes the whole cursor as it then is.
  // A worker fetches on while they catch up, as long as the pages in flight and those not yet stored stay within `width`,
  // and their bytes within the run's page budget (a page holds its share from before it is asked for until it is stored).
  let chain: Promise<void> = Promise.resolve();
  let unstored = 0;
  let fetching = 0;
  let failure: unknown;
  // The pages to fetch, in order, handed out one at a time (never listed up front).
  const next = (): number | undefined => {
    while (nextPage <= endPage && isPageDone(doneAtStart, nextPage)) nextPage++;
    return nextPage <= endPage && nextPage < capPage && failure === undefined ? nextPage++ : undefined;
  };
  const worker = async (): Promise<void> => {
    for (let page = next(); page !== undefined; page = next()) {
      let hold: PageHold | undefined;
      try {
        hold = await ctx.pages.open({ expected });
        fetching += 1;
        const response = await fetchPage(ctx, collection, { ...query, page: String(page) }, null, true, hold).finally(() => (fetching -= 1));
        hold.read();
        expected = Math.max(expected, response.bytes);
        if (response.status === 422) {
          capPage = Math.min(capPage, page);
          continue;
        }
        // No `next`: the list ends here, whatever page 1 claimed (pages are not asked for past it).
        if (!response.links.next) endPage = Math.min(endPage, page);
        const held = hold;
        hold = undefined;
        unstored += 1;
        chain = chain.then(() => {
          // Parsed only now (see the client): a page waiting here holds its bytes.
          const items = listOf(collection, response);
          cursor = { ...withPageDone(cursor, page), pages: cursor.pages + 1, items: cursor.items + items.length };
          return commitPage(ctx, collection, items, cursor);
        });
        chain.then(
          () => {
            unstored -= 1;
            held.release();
          },
          (error: unknown) => {
            unstored -= 1;
            held.release();
            failure ??= error;
          },
        );
        if (unstored + fetching >= width) await chain;
      } catch (error) {
        failure ??= error;
      } finally {
        hold?.release();
      }
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, Math.min(width, lastPage - cursor.doneThrough)) }, worker));
  await chain.catch(() => undefined);
  if (failure !== undefined) throw failure;
  return { cursor, capped: capPage !== Infinity };
}

/** A page walk's cursor whose last page is past PAGE_WALK_MAX: walked by number through page 1 only, the claim kept as `claimedLast`. */
function believeLastPage(cursor: Cursor): Cursor {
  if (cursor.lastPage === null || cursor.lastPage <= PAGE_WALK_MAX || cursor.walkSince !== null) return cursor;
  return { ...cursor, lastPage: 1, claimedLast: cursor.lastPage };
}

/**
 * Where page 1 claimed more pages than PAGE_WALK_MAX: the rest of the list
 * by `since` where it has it (as past the page cap: from the newest item
 * stored), else page by page from the first page not done, each page
 * asked for only when the one before had a `next` link.
 */
async function pastTheBound(ctx: RunContext, collection: Collection, start: Cursor, query: Record<string, string>): Promise<Cursor> {
  let cursor = start;
  const since = collection.sinceQuery && collection.capSince ? await collection.capSince() : null;
  const how = since !== null ? `by since ${since}` : `page by page from page ${cursor.doneThrough + 1}, following next links`;
  ctx.logger.warn(
    { event: 'import_walk_paged', import: ctx.record.name, list: collection.name, claimed_last_page: cursor.claimedLast, bound: PAGE_WALK_MAX, by: since !== null ? 'since' : 'next' },
    `${collection.name}: page 1 claims ${cursor.claimedLast} pages, more than the ${PAGE_WALK_MAX} a walk takes by number (GitHub serves a few hundred at most); walking on ${how}`,
  );
  if (since !== null) {
    cursor = { ...cursor, walkSince: since, lastPage: 1 };
    await ctx.commit([writeCursorStep(ctx.db, ctx.importId, cursor, Date.now())]);
    return sinceWalk(ctx, collection, cursor);
  }
  for (let page = cursor.doneThrough + 1; ; page++) {
    const response = await fetchPage(ctx, collection, { ...query, page: String(page) }, null, true);
    if (response.status === 422) {
      await collection.onCap?.();
      break;
    }
    const items = listOf(collection, response);
    const end = items.length === 0 || !response.links.next;
    cursor = { ...withPageDone(cursor, page), pages: cursor.pages + 1, items: cursor.items + items.length, done: end };
    await commitPage(ctx, collection, items, cursor);
    if (end) return cursor;
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
    const items = listOf(collection, response);
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
    const items = response.status === 304 || response.status === 422 ? [] : listOf(collection, response);
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
    await commitPage(ctx, collection, newer, cursor, { notModified: response.status === 304 });
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
async function fetchPage(ctx: RunContext, collection: Collection, query: Record<string, string>, etag: string | null, capAllowed = false, meter?: BodyMeter): Promise<GithubResponse> {
  const response = await ctx.client.get(collection.path, { query, etag, ...(meter ? { meter } : {}) });
  if (response.status === 304 || (response.status >= 200 && response.status < 300)) return response;
  if (response.status === 410 || response.status === 409) {
    ctx.logger.info({ event: 'import_list_empty', import: ctx.record.name, list: collection.name, status: response.status, reason: messageOf(response.data) }, `${collection.name}: ${messageOf(response.data)}`);
    return { ...response, status: 200, data: [], links: {} };
  }
  if (response.status === 422 && capAllowed) return response;
  throw new GithubRequestError(collection.path, response.status, messageOf(response.data));
}

/**
 * The items of a list answer, checked (see shape.ts).
 * @throws GithubAnswerError when the answer is not a list of objects.
 */
function listOf(collection: Collection, response: GithubResponse): any[] {
  return listItems(collection.path, response.data);
}

export function messageOf(data: unknown): string {
  return data && typeof data === 'object' && typeof (data as { message?: unknown }).message === 'string' ? (data as { message: string }).message : 'unexpected answer';
}
