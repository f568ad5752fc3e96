import { afterEach, describe, expect, it } from 'vitest';
import { PAGE_WALK_MAX } from '../../src/importer/run/walk.js';
import { generateProject } from '../fake-github/index.js';
import { credentialNames, expectedCounts, importedCounts, startImportHarness, type ImportHarness } from './harness.js';

/*
 * An API host whose page 1 claims a last page of 1,000,000,000 (issue 24,
 * finding 3): the walk used to list every page number up front and keep
 * every page done in its cursor, and died out of heap — again at every
 * start, from the stored cursor. Now a claim past PAGE_WALK_MAX is not
 * believed: the walk goes on by `since` or page by page, following `next`.
 */

const CLAIMED = 1_000_000_000;
/** What a page walk's cursor may take in the database (a few numbers; a list of every page would take gigabytes). */
const SMALL_CURSOR_CHARS = 200;

/** Lists of 2+ pages at 100 a page: issues (with since), comments (with since), events (without: page by page). */
const project = () => generateProject({ issues: 90, pulls: 25, commentsPerIssue: 2, reviewCommentsPerPull: 1, reviewsPerPull: 1, users: 8, seed: 24 });

async function storedCursors(h: ImportHarness): Promise<{ collection: string; next_url: string | null }[]> {
  return h.app.kernel.database.db.selectFrom('import_cursors').select(['collection', 'next_url']).execute();
}

let h: ImportHarness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

describe('a page 1 that claims a billion pages', () => {
  it('is not believed: the import completes page by page or by since, says so, and stores small cursors', async () => {
    h = await startImportHarness({ fake: { project: project(), claimLastPage: CLAIMED } });
    const record = await h.app.importer.create({ project: h.project, apiUrl: h.fake.apiUrl, credentials: credentialNames(1) });
    const { outcome } = await h.app.importer.runHere(record.name);
    const status = await h.app.importer.status(record.name);
    expect(status.failure).toBeNull();
    expect(outcome).toBe('synced');
    expect(importedCounts(status)).toEqual(expectedCounts(h.fake));

    for (const cursor of await storedCursors(h)) expect([cursor.collection, (cursor.next_url ?? '').length < SMALL_CURSOR_CHARS]).toEqual([cursor.collection, true]);
    const paged = h.logs.lines.filter((line) => line.event === 'import_walk_paged');
    expect(paged.map((line) => [line.list, line.by]).sort()).toEqual([['events', 'next'], ['issues', 'since'], ['notes', 'since']]);
    for (const line of paged) expect(line).toMatchObject({ claimed_last_page: CLAIMED, bound: PAGE_WALK_MAX });
    expect(String(paged.find((line) => line.list === 'events')!.msg)).toMatch(/page by page from page 2, following next links/);
    // Nothing asked for a page past the end of the longest list.
    const expected = h.fake.expected();
    const longest = Math.max(expected.issue + expected.pull_request, expected.note, expected.issue_event);
    const asked = h.fake.requests.filter((entry) => entry.host === 'api').map((entry) => Number(new URLSearchParams(entry.query).get('page') ?? '1'));
    expect(Math.max(...asked)).toBeLessThanOrEqual(Math.ceil(longest / 100));
  }, 120_000);

  it('reviews whose next links never end: one pull request\'s job stops after its page bound and lists why', async () => {
    h = await startImportHarness({ fake: { project: project() } });
    const pull = h.fake.project.pulls[0]!.number;
    const reviews = `/repos/${h.fake.project.repo.owner}/${h.fake.project.repo.name}/pulls/${pull}/reviews`;
    h.fake.inject({ match: (request) => request.path.endsWith(reviews), times: Infinity, fault: { status: 200, body: [], headers: { link: `<${h.fake.apiUrl}${reviews}?page=2>; rel="next"` } } });
    const record = await h.app.importer.create({ project: h.project, apiUrl: h.fake.apiUrl, credentials: credentialNames(1) });
    const { outcome } = await h.app.importer.runHere(record.name);
    expect(outcome).toBe('synced');
    const status = await h.app.importer.status(record.name);
    expect(status.failures).toContainEqual({ type: 'pull_request_review', id: `#${pull}`, error: expect.stringMatching(/^more than 3000 reviews \(30 pages/) });
    expect(h.fake.requests.filter((entry) => entry.path.endsWith(reviews)).length).toBe(30);
  }, 120_000);

  it('a cursor the old walk stored ({ lastPage: 1e9, donePages: [1] }) is read bounded and the walk goes on', async () => {
    h = await startImportHarness({ fake: { project: project(), claimLastPage: CLAIMED } });
    const record = await h.app.importer.create({ project: h.project, apiUrl: h.fake.apiUrl, credentials: credentialNames(1) });
    const db = h.app.kernel.database.db;
    // What the old walk committed with page 1 before it built its list of a billion pages and died.
    await db
      .insertInto('import_cursors')
      .values({ import_id: record.id, collection: 'events', run: record.run, done: 0, next_url: JSON.stringify({ lastPage: CLAIMED, donePages: [1] }), walk_since: null, since: null, etag: null, last_id: null, pages: 1, items: 100, updated_at: Date.now() })
      .execute();
    const { outcome } = await h.app.importer.runHere(record.name);
    expect((await h.app.importer.get(record.name)).failure).toBeNull();
    expect(outcome).toBe('synced');
    const events = (await storedCursors(h)).find((cursor) => cursor.collection === 'events')!;
    expect(JSON.parse(events.next_url!)).toMatchObject({ lastPage: 1, claimedLast: CLAIMED, donePages: [] });
    expect(events.next_url!.length).toBeLessThan(SMALL_CURSOR_CHARS);
    // Page 1 counted as done: the walk went on from page 2.
    const eventPages = h.fake.requests.filter((entry) => entry.path.endsWith('/issues/events')).map((entry) => new URLSearchParams(entry.query).get('page'));
    expect(eventPages).not.toContain('1');
    expect(eventPages).toContain('2');
  }, 120_000);
});
