import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { signBody } from '../../src/replication/webhooks/index.js';
import { FakeUpstream, smallProject } from '../fake-github/index.js';
import { eventually, testJobsUrl } from '../support/harness.js';
import { testSecret } from '../support/secrets.js';
import { changeHead, deletedChangesSince } from './support/deleted-changes.js';
import { importFakeToCopy, type FakeAndCopy } from './support/fake-vs-copy.js';

/*
 * Webhooks keep an import fresh: the fake GitHub changes its project as a
 * user would and sends GitHub's deliveries (FakeUpstream); forgesync fetches
 * what each names and the copy, read through the GitHub-compatible API,
 * answers as the fake does. What the API says is gone leaves the copy, with
 * a `deleted` change for the feeds. SQLite with the in-process jobs,
 * PostgreSQL with BullMQ.
 */

const HOOK_SECRET = testSecret('REFRESH_HOOK_SECRET');

describe.each([
  { database: 'sqlite' as const, jobs: undefined },
  { database: 'postgres' as const, jobs: testJobsUrl(12) },
])('webhook refreshes on $database, jobs $jobs', ({ database, jobs }) => {
  let pair: FakeAndCopy;
  let upstream: FakeUpstream;
  let hooks: string;

  beforeAll(async () => {
    pair = await importFakeToCopy({ project: smallProject(), database, env: { FORGESYNC_GITHUB_WEBHOOK_SECRET: HOOK_SECRET, ...(jobs ? { FORGESYNC_JOBS_URL: jobs } : {}) } });
    await pair.harness.app.startService();
    hooks = `${pair.copyBase.replace(/\/github$/, '')}/hooks/github`;
    upstream = new FakeUpstream(pair.harness.fake, { url: hooks, secret: HOOK_SECRET });
  }, 120_000);
  afterAll(async () => {
    await pair?.close();
  });

  const repo = () => `/repos/${pair.project}`;

  /** Waits until the copy answers every path as the fake does (status and body). */
  async function matches(...paths: string[]): Promise<void> {
    let last: unknown;
    await eventually(`the copy to answer ${paths.join(', ')} as the fake does`, async () => {
      for (const path of paths) {
        const { fake, copy } = await pair.both(path);
        last = { path, status: [fake.status, copy.status], differences: differences(comparable(fake.body), comparable(copy.body)) };
        // An error's body names GitHub's documentation and wording; its status is what a client acts on.
        if (fake.status !== copy.status || (fake.status < 300 && JSON.stringify(comparable(fake.body)) !== JSON.stringify(comparable(copy.body)))) return undefined;
      }
      return true;
    }, 15_000).catch((error: Error) => {
      throw new Error(`${error.message}; last compared: ${JSON.stringify(last).slice(0, 3000)}`);
    });
  }

  /**
   * What of an answer is compared: all of it but the links in bodies to
   * attached files (the copy serves their bytes itself, from its own URLs)
   * and release assets' download counts and URLs (the same reason).
   */
  function comparable(node: unknown): unknown {
    if (Array.isArray(node)) return node.map(comparable);
    if (node === null || typeof node !== 'object') return node;
    const out: Record<string, unknown> = {};
    for (const [key, value] of Object.entries(node)) {
      if (key === 'download_count' || key === 'browser_download_url') continue;
      out[key] = key === 'body' && typeof value === 'string' ? value.replace(/\(http[^)\s]*\)/g, '(link)') : comparable(value);
    }
    return out;
  }

  /** Where two JSON values differ: paths with both values (a few). */
  function differences(a: unknown, b: unknown, at = '', out: string[] = []): string[] {
    if (out.length >= 8) return out;
    if (a !== null && b !== null && typeof a === 'object' && typeof b === 'object') {
      for (const key of new Set([...Object.keys(a), ...Object.keys(b)])) differences((a as any)[key], (b as any)[key], `${at}.${key}`, out);
    } else if (JSON.stringify(a) !== JSON.stringify(b)) out.push(`${at}: ${JSON.stringify(a)?.slice(0, 80)} vs ${JSON.stringify(b)?.slice(0, 80)}`);
    return out;
  }

  /** Every delivery was answered 202 accepted for the import. */
  function acceptedAll(deliveries: { status: number; body: unknown }[]): void {
    expect(deliveries.length).toBeGreaterThan(0);
    for (const delivery of deliveries) expect(delivery).toMatchObject({ status: 202, body: { result: 'accepted', imports: [pair.importName] } });
  }

  it('issues: opened with a label, edited, closed, deleted', async () => {
    const opened = await upstream.openIssue({ title: 'Opened upstream', body: 'a body', user: 'bob', labels: ['bug'] });
    acceptedAll(opened.deliveries);
    const number = opened.issue.number;
    await matches(`${repo()}/issues/${number}`, `${repo()}/issues?state=all&per_page=100`);
    acceptedAll((await upstream.editIssue(number, { title: 'Edited upstream' })).deliveries);
    acceptedAll((await upstream.closeIssue(number)).deliveries);
    await matches(`${repo()}/issues/${number}`, `${repo()}/issues?state=closed`);
    const commented = await upstream.comment(number, 'soon gone');
    acceptedAll(commented.deliveries);
    await matches(`${repo()}/issues/comments/${commented.comment.id}`);
    const mark = await changeHead(pair.harness.app.kernel.database.db);
    acceptedAll((await upstream.deleteIssue(number)).deliveries);
    await matches(`${repo()}/issues/${number}`, `${repo()}/issues?state=all&per_page=100`, `${repo()}/issues/comments?per_page=100`);
    // The feeds learn of both deletions.
    expect(await deletedChangesSince(pair.harness.app.kernel.database.db, mark)).toEqual([`issue ${opened.issue.id}`, `note ${commented.comment.id}`]);
  });

  it('comments: created, edited and deleted, counted on their issue', async () => {
    const number = pair.harness.fake.project.issues[0]!.number;
    const created = await upstream.comment(number, 'a comment from a webhook');
    acceptedAll(created.deliveries);
    await matches(`${repo()}/issues/comments/${created.comment.id}`, `${repo()}/issues/${number}`, `${repo()}/issues/${number}/comments`);
    acceptedAll((await upstream.editComment(created.comment.id, 'edited')).deliveries);
    await matches(`${repo()}/issues/comments/${created.comment.id}`);
    acceptedAll((await upstream.deleteComment(created.comment.id)).deliveries);
    await matches(`${repo()}/issues/comments/${created.comment.id}`, `${repo()}/issues/${number}`, `${repo()}/issues/${number}/comments`);
  });

  it('pull requests: edited, labelled, reviewed, review comments and threads', async () => {
    const number = pair.harness.fake.project.pulls[0]!.number;
    acceptedAll((await upstream.editPull(number, { title: 'A pull request edited upstream' })).deliveries);
    acceptedAll((await upstream.labelPull(number, 'enhancement')).deliveries);
    await matches(`${repo()}/pulls/${number}`, `${repo()}/issues/${number}`);
    const commented = await upstream.comment(number, 'a conversation comment on the pull request');
    acceptedAll(commented.deliveries);
    await matches(`${repo()}/issues/comments/${commented.comment.id}`, `${repo()}/pulls/${number}`, `${repo()}/issues/${number}`);
    const reviewed = await upstream.submitReview(number, { user: 'carol', state: 'COMMENTED', body: 'looks fine', comments: [{ path: 'README.md', line: 1, body: 'a remark' }] });
    acceptedAll(reviewed.deliveries);
    const comment = reviewed.comments[0]!;
    await matches(`${repo()}/pulls/${number}/reviews`, `${repo()}/pulls/comments/${comment.id}`, `${repo()}/pulls/${number}`, `${repo()}/issues/${number}`);
    acceptedAll((await upstream.editReviewComment(comment.id, 'a remark, edited')).deliveries);
    acceptedAll((await upstream.resolveThread(comment.id)).deliveries);
    await matches(`${repo()}/pulls/comments/${comment.id}`);
    acceptedAll((await upstream.deleteReviewComment(comment.id)).deliveries);
    await matches(`${repo()}/pulls/comments/${comment.id}`, `${repo()}/pulls/${number}`, `${repo()}/pulls/${number}/comments`);
  });

  it('labels, milestones and releases: created, edited, deleted', async () => {
    acceptedAll((await upstream.createLabel({ name: 'triage', color: 'ededed' })).deliveries);
    acceptedAll((await upstream.editLabel('triage', { name: 'needs triage', color: '000000' })).deliveries);
    acceptedAll((await upstream.deleteLabel('question')).deliveries);
    await matches(`${repo()}/labels?per_page=100`, `${repo()}/labels/needs%20triage`, `${repo()}/labels/question`);
    const milestone = await upstream.createMilestone({ title: 'v2.0' });
    acceptedAll(milestone.deliveries);
    acceptedAll((await upstream.editMilestone(milestone.milestone.number, { title: 'v2.0.0' })).deliveries);
    await matches(`${repo()}/milestones/${milestone.milestone.number}`);
    acceptedAll((await upstream.deleteMilestone(milestone.milestone.number)).deliveries);
    await matches(`${repo()}/milestones?state=all`, `${repo()}/milestones/${milestone.milestone.number}`);
    const release = await upstream.publishRelease({ tag: 'v9.9.9', name: 'Nine', body: 'notes' });
    acceptedAll(release.deliveries);
    await matches(`${repo()}/releases`, `${repo()}/releases/${release.release.id}`);
    acceptedAll((await upstream.deleteRelease(release.release.id)).deliveries);
    await matches(`${repo()}/releases`, `${repo()}/releases/${release.release.id}`);
  });

  it('collaborators and branch protection: the lists are read again', async () => {
    acceptedAll((await upstream.addCollaborator('dave', 'maintain')).deliveries);
    acceptedAll((await upstream.protectBranch('main')).deliveries);
    await matches(`${repo()}/collaborators`, `${repo()}/branches/main/protection`);
    acceptedAll((await upstream.removeCollaborator('dave')).deliveries);
    acceptedAll((await upstream.unprotectBranch('main')).deliveries);
    await matches(`${repo()}/collaborators`, `${repo()}/branches/main/protection`);
  });

  it('a burst of deliveries for one issue costs one fetch', async () => {
    // The syncs the tests before asked for over first: a sync's list would bring the edits too.
    await eventually('the import idle', async () => {
      const status = await pair.harness.app.importer.status(pair.importName);
      return status.state === 'synced' && status.refreshes.waiting === 0 ? true : undefined;
    }, 30_000);
    const number = pair.harness.fake.project.issues[1]!.number;
    const built = [];
    for (let edit = 0; edit < 20; edit++) built.push(...(await upstream.editIssue(number, { title: `Edited ${edit}` }, { deliver: false })).planned);
    const path = `/issues/${number}`;
    const fetched = () => pair.harness.fake.requests.filter((entry) => entry.path.endsWith(`${pair.project}${path}`)).length;
    const before = fetched();
    // The import's lease held meanwhile (as a sync would hold it): however the burst is spread in time, it is recorded before any refresh.
    const lease = await pair.harness.app.kernel.leases.acquire(`import:github:${pair.importName}`, { ttlMs: 60_000, owner: 'burst test', waitMs: 60_000 });
    const answers = await Promise.all(built.map((planned) => upstream.deliver(planned.event, planned.payload)));
    await lease.release();
    acceptedAll(answers);
    await pair.harness.app.importer.tick();
    // The copy alone is read until it has the last edit: reading the fake would count as fetches.
    await eventually('the last edit in the copy', async () => (((await pair.copy(`${repo()}${path}`)).body as { title?: string }).title === 'Edited 19' ? true : undefined), 15_000);
    expect(fetched() - before).toBe(1);
    await matches(`${repo()}${path}`);
  });

  it('a repository nobody imports: nothing recorded; a bad signature: refused', async () => {
    const body = JSON.stringify({ action: 'opened', issue: { number: 1 }, repository: { id: 987_654_321 } });
    const post = (signature: string) =>
      fetch(hooks, { method: 'POST', headers: { 'content-type': 'application/json', 'x-github-event': 'issues', 'x-hub-signature-256': signature }, body }).then(async (response) => ({ status: response.status, body: await response.json() }));
    expect(await post(signBody(HOOK_SECRET, body))).toMatchObject({ status: 202, body: { result: 'unknown_repository' } });
    expect((await post(signBody('another secret', body))).status).toBe(401);
  });
});
