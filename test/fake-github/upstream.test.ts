import { describe, expect, it } from 'vitest';
import { FakeUpstream } from './upstream.js';
import { compared, startReceiver, upstreamFixture, withoutExample } from './upstream-check.js';
import { api } from './walk.js';

const t = upstreamFixture();
const { get, all, delivered } = t;

describe('FakeUpstream: issues', () => {
  it('opens an issue with a label, an assignee and a milestone: opened, labeled, assigned, milestoned', async () => {
    const { issue, deliveries } = await t.upstream.openIssue({ title: 'Widgets crash on resize', body: 'Steps: resize', user: 'erin', labels: ['bug'], assignees: ['bob'], milestone: 1 });
    const [opened, labeled, assigned, milestoned] = delivered(deliveries, ['issues.opened', 'issues.labeled', 'issues.assigned', 'issues.milestoned']);
    expect(opened?.issue).toMatchObject({ number: issue.number, title: 'Widgets crash on resize', state: 'open' });
    expect(labeled?.label).toMatchObject({ name: 'bug' });
    expect(assigned?.assignee).toMatchObject({ login: 'bob' });
    expect(milestoned?.milestone).toMatchObject({ number: 1 });
    const answer = await get(`/issues/${issue.number}`);
    expect(answer.status).toBe(200);
    // The payload's issue is the API's answer (webhooks add `draft` to plain issues).
    const hooked = { ...(opened?.issue as Record<string, unknown>) };
    if (!('draft' in answer.body)) delete hooked.draft;
    expect(answer.body).toEqual(hooked);
    expect((await all('/issues?state=open')).map((i) => i.number)).toContain(issue.number);
  });

  it('edits, closes and reopens an issue; the answer and its ETag follow', async () => {
    const n = t.fake.project.issues.find((i) => i.pull === null && i.state === 'open')!.number;
    const before = await get(`/issues/${n}`);
    const edited = await t.upstream.editIssue(n, { title: 'A better title' }, { by: 'alice' });
    const [payload] = delivered(edited.deliveries, ['issues.edited']);
    expect(payload?.changes).toEqual({ title: { from: before.body.title } });
    const after = await get(`/issues/${n}`);
    expect(after.body.title).toBe('A better title');
    expect(after.headers.get('etag')).not.toBe(before.headers.get('etag'));
    // A conditional request with the old ETag is answered in full, not 304.
    expect((await api(`${t.repoApi()}/issues/${n}`, { token: t.token, headers: { 'if-none-match': before.headers.get('etag')! } })).status).toBe(200);
    delivered((await t.upstream.closeIssue(n, { reason: 'not_planned' })).deliveries, ['issues.closed']);
    expect((await get(`/issues/${n}`)).body).toMatchObject({ state: 'closed', state_reason: 'not_planned' });
    delivered((await t.upstream.reopenIssue(n)).deliveries, ['issues.reopened']);
    expect((await get(`/issues/${n}`)).body).toMatchObject({ state: 'open', state_reason: 'reopened' });
  });

  it('labels and unlabels an issue', async () => {
    delivered((await t.upstream.labelIssue(2, 'question')).deliveries, ['issues.labeled']);
    expect((await get('/issues/2/labels')).body.map((l: { name: string }) => l.name)).toContain('question');
    delivered((await t.upstream.unlabelIssue(2, 'question')).deliveries, ['issues.unlabeled']);
    expect((await get('/issues/2/labels')).body.map((l: { name: string }) => l.name)).not.toContain('question');
    // A label new to the repository is created first, as GitHub does.
    delivered((await t.upstream.labelIssue(2, 'needs-triage')).deliveries, ['label.created', 'issues.labeled']);
    expect((await get('/labels/needs-triage')).status).toBe(200);
  });

  it('deletes an issue: 410 on its number, gone from lists, its comments and events gone', async () => {
    const issue = t.fake.project.issue(4);
    expect(issue.pull).toBeNull();
    const comments = (t.fake.project.commentsByIssue.get(4) ?? []).map((c) => c.id);
    expect(comments.length).toBeGreaterThan(0);
    const { deliveries } = await t.upstream.deleteIssue(4);
    const [payload] = delivered(deliveries, ['issues.deleted']);
    expect(payload?.issue).toMatchObject({ number: 4, id: issue.id });
    const gone = await get('/issues/4');
    expect(gone.status).toBe(410);
    expect(gone.body).toMatchObject({ message: 'This issue was deleted', documentation_url: expect.stringContaining('docs.github.com') });
    expect((await get('/issues/4/comments')).status).toBe(410);
    expect((await all('/issues?state=all')).map((i) => i.number)).not.toContain(4);
    const ids = (await all('/issues/comments')).map((c) => c.id);
    for (const id of comments) {
      expect(ids).not.toContain(id);
      expect((await get(`/issues/comments/${id}`)).status).toBe(404);
    }
    expect((await all('/issues/events')).some((e) => e.issue?.number === 4)).toBe(false);
    // Numbers are never reused.
    const next = await t.upstream.openIssue({ title: 'After the deletion', user: 'dave' }, { deliver: false });
    expect(next.issue.number).toBe(t.fake.project.highestNumber);
    expect(next.issue.number).not.toBe(4);
    expect(next.deliveries).toEqual([]);
  });

  it('refuses to delete a pull request, as GitHub cannot', async () => {
    await expect(t.upstream.deleteIssue(3)).rejects.toThrow(/pull request/);
  });
});

describe('FakeUpstream: issue comments', () => {
  it('comments, edits and deletes: counts and updated_at move as on GitHub', async () => {
    const before = (await get('/issues/6')).body;
    const created = await t.upstream.comment(6, 'Seen it too', { by: 'carol' });
    const [payload] = delivered(created.deliveries, ['issue_comment.created']);
    expect(payload?.comment).toMatchObject({ id: created.comment.id, body: 'Seen it too' });
    const bumped = (await get('/issues/6')).body;
    expect(bumped.comments).toBe(before.comments + 1);
    expect(Date.parse(bumped.updated_at)).toBeGreaterThan(Date.parse(before.updated_at));
    expect((await get(`/issues/comments/${created.comment.id}`)).body.body).toBe('Seen it too');

    const edited = await t.upstream.editComment(created.comment.id, 'Seen it twice');
    expect(delivered(edited.deliveries, ['issue_comment.edited'])[0]?.changes).toEqual({ body: { from: 'Seen it too' } });
    expect((await get(`/issues/comments/${created.comment.id}`)).body.body).toBe('Seen it twice');

    const deleted = await t.upstream.deleteComment(created.comment.id);
    delivered(deleted.deliveries, ['issue_comment.deleted']);
    expect((await get(`/issues/comments/${created.comment.id}`)).status).toBe(404);
    expect((await all('/issues/6/comments')).map((c) => c.id)).not.toContain(created.comment.id);
    expect((await all('/issues/comments')).map((c) => c.id)).not.toContain(created.comment.id);
    const after = (await get('/issues/6')).body;
    expect(after.comments).toBe(before.comments);
    expect(after.updated_at).toBe(bumped.updated_at);
  });

  it('comments on a pull request: the issue in the payload is the pull request', async () => {
    const { deliveries } = await t.upstream.comment(5, 'LGTM once CI passes', { by: 'alice' });
    const [payload] = delivered(deliveries, ['issue_comment.created']);
    expect(payload?.issue).toMatchObject({ number: 5, pull_request: { url: `${t.repoApi()}/pulls/5` } });
  });
});

describe('FakeUpstream: pull requests and reviews', () => {
  it('edits, labels, closes, reopens and merges a pull request', async () => {
    const edited = await t.upstream.editPull(14, { title: 'Renamed pull request', body: 'New body' });
    const [payload] = delivered(edited.deliveries, ['pull_request.edited']);
    expect(payload).toMatchObject({ number: 14, pull_request: { title: 'Renamed pull request' }, changes: { title: { from: expect.any(String) } } });
    delivered((await t.upstream.labelPull(14, 'enhancement')).deliveries, ['pull_request.labeled']);
    delivered((await t.upstream.unlabelPull(14, 'enhancement')).deliveries, ['pull_request.unlabeled']);
    delivered((await t.upstream.closePull(14)).deliveries, ['pull_request.closed']);
    expect((await get('/pulls/14')).body).toMatchObject({ state: 'closed', merged: false, title: 'Renamed pull request' });
    delivered((await t.upstream.reopenPull(14)).deliveries, ['pull_request.reopened']);
    const merged = await t.upstream.mergePull(14);
    const [closed] = delivered(merged.deliveries, ['pull_request.closed']);
    expect(closed?.pull_request).toMatchObject({ merged: true, merge_commit_sha: merged.sha, state: 'closed' });
    expect((await get('/pulls/14')).body).toMatchObject({ merged: true, merged_by: { login: 'alice' } });
  });

  it('submits a review with a comment, then dismisses it', async () => {
    const { review, comments, deliveries } = await t.upstream.submitReview(5, { user: 'bob', state: 'APPROVED', body: 'Ship it', comments: [{ path: 'src/widget.txt', line: 2, body: 'Nit' }] });
    const [comment, submitted] = delivered(deliveries, ['pull_request_review_comment.created', 'pull_request_review.submitted']);
    expect(comment?.comment).toMatchObject({ id: comments[0]?.id, pull_request_review_id: review.id });
    expect(submitted?.review).toMatchObject({ id: review.id, state: 'approved' });
    const dismissed = await t.upstream.dismissReview(5, review.id);
    expect(delivered(dismissed.deliveries, ['pull_request_review.dismissed'])[0]?.review).toMatchObject({ state: 'dismissed' });
    expect((await get(`/pulls/5/reviews/${review.id}`)).body.state).toBe('DISMISSED');
  });

  it('creates, edits, resolves and deletes a review comment: review_comments and updated_at move', async () => {
    const before = (await get('/pulls/11')).body;
    const created = await t.upstream.createReviewComment(11, { user: 'carol', body: 'Why this?', path: 'src/widget.txt', line: 3 });
    delivered(created.deliveries, ['pull_request_review_comment.created', 'pull_request_review.submitted']);
    const bumped = (await get('/pulls/11')).body;
    expect(bumped.review_comments).toBe(before.review_comments + 1);
    expect(Date.parse(bumped.updated_at)).toBeGreaterThan(Date.parse(before.updated_at));
    const reply = await t.upstream.createReviewComment(11, { user: 'dave', body: 'Because', inReplyTo: created.comment.id });
    expect(reply.comment.inReplyTo).toBe(created.comment.id);

    const edited = await t.upstream.editReviewComment(created.comment.id, 'Why this line?');
    expect(delivered(edited.deliveries, ['pull_request_review_comment.edited'])[0]?.changes).toEqual({ body: { from: 'Why this?' } });
    expect((await get(`/pulls/comments/${created.comment.id}`)).body.body).toBe('Why this line?');

    const resolved = await t.upstream.resolveThread(reply.comment.id);
    const [thread] = delivered(resolved.deliveries, ['pull_request_review_thread.resolved']);
    expect((thread?.thread as { comments: { id: number }[] }).comments.map((c) => c.id)).toEqual([created.comment.id, reply.comment.id]);
    expect(t.fake.project.resolvedThreads.has(created.comment.id)).toBe(true);
    delivered((await t.upstream.unresolveThread(created.comment.id)).deliveries, ['pull_request_review_thread.unresolved']);
    expect(t.fake.project.resolvedThreads.has(created.comment.id)).toBe(false);

    const current = (await get('/pulls/11')).body;
    delivered((await t.upstream.deleteReviewComment(reply.comment.id)).deliveries, ['pull_request_review_comment.deleted']);
    expect((await get(`/pulls/comments/${reply.comment.id}`)).status).toBe(404);
    expect((await all('/pulls/11/comments')).map((c) => c.id)).not.toContain(reply.comment.id);
    expect((await all('/pulls/comments')).map((c) => c.id)).not.toContain(reply.comment.id);
    const after = (await get('/pulls/11')).body;
    expect(after.review_comments).toBe(current.review_comments - 1);
    expect(after.updated_at).toBe(current.updated_at);
  });
});

describe('FakeUpstream: deliveries', () => {
  it('sends nothing with { deliver: false } or delivering off, and still changes the fake', async () => {
    const count = t.upstream.sent.length;
    const quiet = await t.upstream.comment(7, 'quiet', { deliver: false });
    expect(quiet.deliveries).toEqual([]);
    expect(quiet.planned.map((p) => `${p.event}.${(p.payload as { action: string }).action}`)).toEqual(['issue_comment.created']);
    t.upstream.delivering = false;
    try {
      expect((await t.upstream.comment(7, 'quieter')).deliveries).toEqual([]);
      expect((await t.upstream.comment(7, 'loud', { deliver: true })).deliveries).toHaveLength(1);
    } finally {
      t.upstream.delivering = true;
    }
    expect(t.upstream.sent.length).toBe(count + 1);
    expect((await all('/issues/7/comments')).map((c) => c.body)).toEqual(expect.arrayContaining(['quiet', 'quieter', 'loud']));
  });

  it('builds a signed delivery for a test that posts it itself, and deliver() posts one', async () => {
    const payload = t.upstream.webhooks.envelope('created', 'alice', { label: t.upstream.webhooks.label(t.fake.project.labels[0]!) });
    const built = t.upstream.buildDelivery('label', payload);
    expect(built.headers).toMatchObject({ 'X-GitHub-Event': 'label', 'X-GitHub-Delivery': built.id, 'Content-Type': 'application/json' });
    const response = await fetch(t.receiver.url, { method: 'POST', headers: built.headers, body: built.body });
    expect(response.status).toBe(202);
    expect(t.receiver.received.at(-1)?.signed).toBe(true);
    expect(t.receiver.received.at(-1)?.raw.toString('utf8')).toBe(built.body);
    const sent = await t.upstream.deliver('label', payload);
    expect(sent).toMatchObject({ event: 'label', action: 'created', status: 202 });
    expect(t.upstream.sent.at(-1)).toBe(sent);
  });

  it('records a receiver that cannot be reached with status 0, as GitHub records a failed delivery', async () => {
    const closed = await startReceiver(t.secret);
    await closed.close();
    const lost = new FakeUpstream(t.fake, { url: closed.url, secret: t.secret });
    const { deliveries } = await lost.comment(7, 'into the void');
    expect(deliveries).toHaveLength(1);
    expect(deliveries[0]?.status).toBe(0);
    expect(typeof deliveries[0]?.body).toBe('string');
  });

  it('without a target, changes the fake and sends nothing', async () => {
    const silent = new FakeUpstream(t.fake);
    const { comment, deliveries } = await silent.comment(7, 'no hook');
    expect(deliveries).toEqual([]);
    expect((await get(`/issues/comments/${comment.id}`)).status).toBe(200);
    expect(() => silent.buildDelivery('ping', {})).toThrow(/target/);
  });
});

describe('FakeUpstream: payloads', () => {
  it('compared every issue and pull request event.action sent with @octokit/webhooks-examples', () => {
    expect([...compared].sort()).toEqual([
      'issue_comment.created', 'issue_comment.deleted', 'issue_comment.edited', 'issues.assigned', 'issues.deleted', 'issues.edited', 'issues.labeled', 'issues.milestoned',
      'issues.opened', 'issues.reopened', 'issues.unlabeled', 'label.created', 'pull_request.closed', 'pull_request.labeled', 'pull_request.reopened', 'pull_request.unlabeled',
      'pull_request_review.dismissed', 'pull_request_review.submitted', 'pull_request_review_comment.created', 'pull_request_review_comment.deleted',
      'pull_request_review_comment.edited', 'pull_request_review_thread.resolved', 'pull_request_review_thread.unresolved',
    ]);
    // The package has no example of these.
    expect([...withoutExample].sort()).toEqual(['issues.closed', 'pull_request.edited']);
  });
});
