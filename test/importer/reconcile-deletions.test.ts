import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { deleteComment, deleteIssue, deleteLabel, deleteMilestone, deleteRelease, deleteReviewComment, editPull, renameRepository } from '../fake-github/mutations.js';
import { credentialNames, startImportHarness, type ImportHarness } from './harness.js';
import { changeHead, deletedChangesSince } from './support/deleted-changes.js';

/*
 * What a sync finds deleted upstream with no webhook saying so: small lists
 * answered anew drop what they left out, GitHub's comment counts say which
 * issues and pull requests to list again, and the large lists are compared
 * in full once FORGESYNC_IMPORT_RECONCILE_INTERVAL has passed since the
 * last compare. A renamed repository is followed by its id.
 */

const HOUR = 3_600_000;

describe.each(['sqlite', 'postgres'] as const)('deletions upstream, reconciled by sync on %s', (database) => {
  let h: ImportHarness;
  let name: string;

  /** The keys stored of `type`. */
  async function keys(type: string): Promise<string[]> {
    const rows = await h.app.kernel.database.db.selectFrom('import_objects').select('key').where('type', '=', type).execute();
    return rows.map((row) => row.key).sort();
  }

  /** The numbers of the stored objects of `type`. */
  async function numbers(type: string): Promise<number[]> {
    const rows = await h.app.kernel.database.db.selectFrom('import_objects').select('number').where('type', '=', type).execute();
    return rows.map((row) => Number(row.number));
  }

  const head = () => changeHead(h.app.kernel.database.db);
  const deletedSince = (afterSeq: number) => deletedChangesSince(h.app.kernel.database.db, afterSeq);

  async function sync(): Promise<void> {
    h.fake.clearLog();
    await h.app.importer.requestSync(name);
    expect((await h.app.importer.runHere(name)).outcome).toBe('synced');
  }

  /** Requests of a full compare: a list from the beginning of time. */
  const compareRequests = () => h.fake.requests.filter((entry) => entry.query.includes('since=1970-01-01'));

  beforeAll(async () => {
    h = await startImportHarness({ database, env: { FORGESYNC_IMPORT_RECONCILE_INTERVAL: '1h' } });
    const record = await h.app.importer.create({ project: h.project, apiUrl: h.fake.apiUrl, credentials: credentialNames(1) });
    name = record.name;
    expect((await h.app.importer.runHere(name)).outcome).toBe('synced');
  });
  afterAll(async () => h?.close());

  it('an unchanged project: a sync deletes nothing, and asks nothing that costs budget', async () => {
    const mark = await head();
    const before = (await keys('note')).length;
    await sync();
    await sync();
    expect(h.fake.stats().counted).toBe(0);
    expect(compareRequests()).toEqual([]);
    expect(await deletedSince(mark)).toEqual([]);
    expect((await keys('note')).length).toBe(before);
  });

  it('drops deleted labels, milestones, releases, assets and counted comments, and follows a renamed repository', async () => {
    const p = h.fake.project;
    const label = deleteLabel(p, 'good first issue');
    const milestone = deleteMilestone(p, 2);
    const kept = p.releases.find((release) => release.tag === 'v1.0.0')!;
    const asset = kept.assets.splice(kept.assets.findIndex((candidate) => candidate.name === 'checksums.txt'), 1)[0]!;
    p.touch('release');
    const release = deleteRelease(p, p.releases.find((candidate) => candidate.tag === 'v1.1.0-rc1')!.id);
    // Counted: the issue and the pull request change too, so the sync lists them again and sees their counts drop.
    const comment = deleteComment(p, p.commentsByIssue.get(1)![0]!.id);
    p.editIssue(1, { body: 'edited after a comment was deleted' });
    const reviewComment = deleteReviewComment(p, p.reviewCommentsByPull.get(5)![0]!.id);
    editPull(p, 5, { title: 'Improve widget 5, again' });
    // Not counted: only the full compare finds these.
    const issue = deleteIssue(p, 2);
    const silent = deleteComment(p, p.commentsByIssue.get(9)![0]!.id);
    const from = `${p.repo.owner}/${p.repo.name}`;
    renameRepository(p, 'widgets-renamed');
    const mark = await head();

    await sync();
    expect(compareRequests()).toEqual([]);
    expect(h.fake.requests.some((entry) => entry.path.endsWith(`/repositories/${p.repo.id}`))).toBe(true);
    const gone = [`label ${label.id}`, `milestone ${milestone.id}`, `release ${release.id}`, `release_asset ${asset.id}`, `release_asset ${release.assets[0]!.id}`, `note ${comment.id}`, `diff_note ${reviewComment.id}`];
    expect(await deletedSince(mark)).toEqual(gone.sort());
    expect(await keys('label')).not.toContain(String(label.id));
    expect(await keys('milestone')).not.toContain(String(milestone.id));
    expect(await keys('release')).toEqual(p.releases.map((candidate) => String(candidate.id)).sort());
    expect(await keys('release_asset')).toEqual(p.releases.flatMap((candidate) => candidate.assets.map((a) => String(a.id))).sort());
    expect(await keys('note')).not.toContain(String(comment.id));
    expect(await keys('diff_note')).toEqual(p.reviewComments.map((c) => String(c.id)).sort());
    // Deleted without a count that says so: still there until the full compare.
    expect(await numbers('issue')).toContain(issue.number);
    expect(await keys('note')).toContain(String(silent.id));

    const status = await h.app.importer.status(name);
    expect(`${status.owner}/${status.repo}`).toBe(`${p.repo.owner}/widgets-renamed`);
    const moved = h.logs.lines.filter((line) => line.event === 'import_repository_moved');
    expect(moved).toEqual([expect.objectContaining({ from, to: `${p.repo.owner}/widgets-renamed`, import: name })]);
    // The rest of the run asked by the new name.
    expect(h.fake.requests.some((entry) => entry.path.includes('/widgets-renamed/'))).toBe(true);
    expect(status.failures.filter((failure) => failure.type === 'note' || failure.type === 'diff_note')).toEqual([]);
  });

  it('compares the large lists in full once the interval has passed: deleted issues (with their notes and events) and comments go', async () => {
    const p = h.fake.project;
    const issue = (await numbers('issue')).find((number) => !p.byNumber.has(number))!;
    expect(issue).toBe(2);
    const issueNotes = (await h.app.kernel.database.db.selectFrom('import_objects').select('key').where('type', '=', 'note').where('number', '=', issue).execute()).map((row) => row.key);
    const issueEvents = (await h.app.kernel.database.db.selectFrom('import_objects').select('key').where('type', '=', 'issue_event').where('number', '=', issue).execute()).map((row) => row.key);
    expect(issueNotes.length).toBeGreaterThan(0);
    const silent = (await keys('note')).filter((key) => !p.commentById.has(Number(key)) && !issueNotes.includes(key));
    expect(silent).toHaveLength(1);
    const issueKey = (await h.app.kernel.database.db.selectFrom('import_objects').select('key').where('type', '=', 'issue').where('number', '=', issue).executeTakeFirstOrThrow()).key;

    // Not due yet: the last compare (the first import) began less than the interval ago.
    let mark = await head();
    await sync();
    expect(compareRequests()).toEqual([]);
    expect(await deletedSince(mark)).toEqual([]);

    // The interval passes (the record of the last compare is moved back past it).
    await h.app.kernel.database.db
      .updateTable('import_cursors')
      .set({ since: new Date(Date.now() - 2 * HOUR).toISOString().replace(/\.\d{3}Z$/, 'Z') })
      .where('collection', '=', 'full-compare')
      .execute();
    mark = await head();
    await sync();
    expect(compareRequests().map((entry) => entry.pathKind).sort()).toEqual(['issues', 'repo_issue_comments', 'repo_review_comments']);
    expect(await deletedSince(mark)).toEqual([`issue ${issueKey}`, ...issueNotes.map((key) => `note ${key}`), ...silent.map((key) => `note ${key}`), ...issueEvents.map((key) => `issue_event ${key}`)].sort());
    expect(await numbers('issue')).not.toContain(issue);
    expect(await numbers('issue_event')).not.toContain(issue);
    expect((await keys('note')).sort()).toEqual(p.comments.map((c) => String(c.id)).sort());
    expect((await keys('diff_note')).sort()).toEqual(p.reviewComments.map((c) => String(c.id)).sort());

    // Compared just now: the next sync lists nothing in full, and an unchanged project costs nothing.
    mark = await head();
    await sync();
    expect(compareRequests()).toEqual([]);
    expect(h.fake.stats().counted).toBe(0);
    expect(await deletedSince(mark)).toEqual([]);
  });
});
