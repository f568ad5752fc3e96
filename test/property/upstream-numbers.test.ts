import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { MAX_LINK_PAGE, pageOf, parseLinks } from '../../src/importer/github/link.js';
import { TokenBudget } from '../../src/importer/github/pacer.js';
import { retryAfterMs } from '../../src/util/retry-after.js';
import { MAX_CLOCK_SKEW_MS, MAX_LIMIT_WAIT_MS, MAX_RATE_LIMIT, rateHeadersOf, resetAtOf, serverDateOf } from '../../src/importer/github/rate-headers.js';
import { isPageDone, withPageDone } from '../../src/importer/store/cursors.js';
import { PAGE_WALK_MAX } from '../../src/importer/run/walk.js';
import { check, hostileString } from './arbitraries.js';

/*
 * The numbers an import takes from an API host's answers (issue 24,
 * finding 3): Link page numbers, `x-ratelimit-*`, `retry-after`, `date`.
 * Whatever the host sends, each comes out within its bound (or as
 * "unknown"), nothing throws, and parsing takes time linear in the text.
 */

/** Cases per property of this file. */
const RUNS = 3_000;
const NOW = Date.UTC(2025, 5, 1, 12);

/** Number-like text as a hostile host might write it. */
const numberText = fc.oneof(
  fc.integer().map(String),
  fc.bigInt({ min: -(10n ** 40n), max: 10n ** 40n }).map(String),
  fc.double().map(String),
  fc.constantFrom('1e308', '-1e308', '1e-308', 'NaN', 'Infinity', '-Infinity', '-0', '0x10', '0b1', '0o7', ' 42 ', '+5', '5.', '.5', '1_000', '٣', '１２', '99999999999999999999999', '9007199254740993', ''),
  fc.date({ noInvalidDate: true }).map((date) => date.toUTCString()),
  fc.constantFrom('Sat, 13 Sep 275760 00:00:00 GMT', 'Tue, 20 Apr -271821 00:00:00 GMT', 'Thu, 01 Jan 1970 00:00:00 GMT', 'Wed, 21 Oct 2015 07:28:00 GMT'),
  hostileString({ maxLength: 12, long: 20_000 }),
);
/** A header's value: text, repeated headers (an array), or nothing. */
const headerValue = fc.oneof({ weight: 6, arbitrary: numberText }, { weight: 1, arbitrary: fc.array(numberText, { maxLength: 3 }) }, { weight: 1, arbitrary: fc.constant(undefined) });

/** Link headers: GitHub's shape with hostile URLs, pages and relations, or any text. */
const linkPart = fc
  .record({ url: fc.oneof(fc.webUrl(), hostileString({ maxLength: 10, long: 2000 })), page: numberText, rel: fc.oneof(fc.constantFrom('next', 'last', 'prev', 'first', 'next last', '"last"', 'LAST'), hostileString({ maxLength: 6 })) })
  .map(({ url, page, rel }) => `<${url}${url.includes('?') ? '&' : '?'}page=${page}>; rel="${rel}"`);
const linkHeader = fc.oneof(
  fc.array(linkPart, { maxLength: 6 }).map((parts) => parts.join(', ')),
  hostileString({ maxLength: 20, long: 16_000 }),
  fc.integer({ min: 1, max: 16_000 }).chain((n) => fc.constantFrom('<'.repeat(n), ', <'.repeat(n / 3), '<a>; rel='.repeat(n / 9), `<${'x'.repeat(n)}`, ';'.repeat(n), `${'<'.repeat(n)}>; rel="last"`)),
);

const within = (value: number, min: number, max: number) => Number.isFinite(value) && value >= min && value <= max;

describe(`numbers from an API host, bounded (${RUNS} cases per property)`, () => {
  it('parseLinks: any header gives only next/last/prev/first as text, never throws', () => {
    check(
      fc.property(linkHeader, (header) => {
        const links = parseLinks(header);
        for (const [rel, url] of Object.entries(links)) {
          expect(['next', 'last', 'prev', 'first']).toContain(rel);
          expect(typeof url).toBe('string');
          expect(url.length).toBeLessThanOrEqual(header.length);
        }
      }),
      RUNS,
    );
  });

  it('pageOf: any link (a URL or not) gives a whole page from 1 to MAX_LINK_PAGE; a page number within it comes back as it is', () => {
    check(
      fc.property(fc.oneof(linkPart.map((part) => parseLinks(part).next ?? parseLinks(part).last ?? part), hostileString({ maxLength: 20, long: 20_000 }), fc.webUrl()), (url) => {
        const page = pageOf(url);
        expect(Number.isSafeInteger(page)).toBe(true);
        expect(within(page, 1, MAX_LINK_PAGE)).toBe(true);
      }),
      RUNS,
    );
    check(
      fc.property(fc.oneof(fc.integer({ min: 1, max: MAX_LINK_PAGE }), fc.constant(1_000_000_000)), (page) => {
        expect(pageOf(`https://ghe.example.com/api/v3/repositories/1/issues?per_page=100&page=${page}`)).toBe(page);
      }),
      RUNS,
    );
  });

  it('x-ratelimit-*: unknown, or a whole limit up to MAX_RATE_LIMIT, remaining up to the limit, a reset at most MAX_LIMIT_WAIT_MS away', () => {
    check(
      fc.property(headerValue, headerValue, headerValue, headerValue, (limit, remaining, reset, used) => {
        const headers = { 'x-ratelimit-limit': limit, 'x-ratelimit-remaining': remaining, 'x-ratelimit-reset': reset, 'x-ratelimit-used': used } as Record<string, string | undefined>;
        const stated = rateHeadersOf(headers, NOW);
        if (stated === undefined) return;
        expect(Number.isSafeInteger(stated.limit) && within(stated.limit, 0, MAX_RATE_LIMIT)).toBe(true);
        expect(Number.isSafeInteger(stated.remaining) && within(stated.remaining, 0, stated.limit)).toBe(true);
        if (stated.resetAt !== undefined) expect(within(stated.resetAt, 0, NOW + MAX_LIMIT_WAIT_MS)).toBe(true);
        const resetAt = resetAtOf(reset, NOW);
        if (resetAt !== undefined) expect(within(resetAt, 0, NOW + MAX_LIMIT_WAIT_MS)).toBe(true);
      }),
      RUNS,
    );
  });

  it('retry-after: unknown, or 0 to MAX_LIMIT_WAIT_MS; date: within MAX_CLOCK_SKEW_MS of ours', () => {
    check(
      fc.property(headerValue, (value) => {
        const wait = retryAfterMs(value, { now: NOW, maxMs: MAX_LIMIT_WAIT_MS });
        if (wait !== undefined) expect(within(wait, 0, MAX_LIMIT_WAIT_MS)).toBe(true);
        expect(within(serverDateOf(value, NOW), NOW - MAX_CLOCK_SKEW_MS, NOW + MAX_CLOCK_SKEW_MS)).toBe(true);
      }),
      RUNS,
    );
  });

  it('a token budget told anything waits a finite time, at most MAX_LIMIT_WAIT_MS (plus slack), and reports a valid reset', () => {
    const told = fc.oneof(
      fc.record({ kind: fc.constant('observe' as const), limit: headerValue, remaining: headerValue, reset: headerValue }),
      fc.record({ kind: fc.constant('exhausted' as const), at: fc.oneof(fc.double(), fc.constant(undefined)) }),
      fc.record({ kind: fc.constant('pause' as const), at: fc.double() }),
    );
    check(
      fc.property(fc.array(told, { minLength: 1, maxLength: 8 }), fc.integer({ min: 0, max: 5 }), (events, inFlight) => {
        const budget = new TokenBudget('GH');
        for (const event of events) {
          if (event.kind === 'observe') budget.observe({ 'x-ratelimit-limit': event.limit, 'x-ratelimit-remaining': event.remaining, 'x-ratelimit-reset': event.reset } as Record<string, string | undefined>, NOW);
          else if (event.kind === 'exhausted') budget.exhausted(event.at, NOW);
          else budget.pauseUntil(event.at, NOW);
        }
        for (let n = 0; n < inFlight; n++) budget.take(NOW);
        expect(within(budget.delay(NOW), 0, MAX_LIMIT_WAIT_MS + 60_000)).toBe(true);
        expect(() => budget.snapshot()).not.toThrow();
      }),
      RUNS,
    );
  });

  it('a page walk\'s record of pages done stays exact and compact, in whatever order pages finish', () => {
    const empty = { lastPage: PAGE_WALK_MAX, doneThrough: 0, donePages: [] as number[], claimedLast: null };
    check(
      fc.property(fc.array(fc.integer({ min: 1, max: 60 }), { maxLength: 80 }), (pages) => {
        const state = pages.reduce((cursor, page) => withPageDone(cursor, page), empty);
        const done = new Set(pages);
        const all = Array.from({ length: 61 }, (_, index) => index + 1);
        expect(all.filter((page) => isPageDone(state, page))).toEqual(all.filter((page) => done.has(page)));
        expect(state.donePages).toEqual([...new Set(state.donePages)].sort((a, b) => a - b));
        expect(state.donePages.every((page) => page > state.doneThrough + 1)).toBe(true);
        expect(state.donePages.length).toBeLessThanOrEqual(done.size);
      }),
      RUNS,
    );
  });
});
