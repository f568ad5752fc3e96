import { describe, expect, it } from 'vitest';
import { FakeUpstream } from './upstream.js';
import { compared, expectDelivered, upstreamFixture, withoutExample } from './upstream-check.js';
import { startFakeGitHub } from './server.js';
import { api } from './walk.js';

const t = upstreamFixture();
const { get, all, delivered } = t;

describe('FakeUpstream: labels', () => {
  it('creates, renames (keeping the id) and deletes a label', async () => {
    const created = await t.upstream.createLabel({ name: 'perf', color: 'fbca04', description: 'Slow things' });
    expect(delivered(created.deliveries, ['label.created'])[0]?.label).toMatchObject({ name: 'perf', id: created.label.id });
    expect((await get('/labels/perf')).body.id).toBe(created.label.id);
    await t.upstream.labelIssue(2, 'perf', { deliver: false });

    const before = await get('/labels');
    const renamed = await t.upstream.editLabel('perf', { name: 'performance', color: 'ff0000' });
    const [edited] = delivered(renamed.deliveries, ['label.edited']);
    expect(edited?.changes).toEqual({ name: { from: 'perf' }, color: { from: 'fbca04' } });
    expect((await get('/labels/perf')).status).toBe(404);
    expect((await get('/labels/performance')).body).toMatchObject({ id: created.label.id, color: 'ff0000' });
    expect((await get('/issues/2/labels')).body.map((l: { name: string }) => l.name)).toContain('performance');
    expect((await get('/labels')).headers.get('etag')).not.toBe(before.headers.get('etag'));

    delivered((await t.upstream.deleteLabel('performance')).deliveries, ['label.deleted']);
    expect((await get('/labels/performance')).status).toBe(404);
    expect((await all('/labels')).map((l) => l.name)).not.toContain('performance');
    expect((await get('/issues/2/labels')).body.map((l: { name: string }) => l.name)).not.toContain('performance');
  });
});

describe('FakeUpstream: milestones', () => {
  it('creates, edits, closes and deletes a milestone', async () => {
    const created = await t.upstream.createMilestone({ title: 'v2.0', description: 'Next', dueOn: Date.UTC(2030, 0, 1) });
    const n = created.milestone.number;
    delivered(created.deliveries, ['milestone.created']);
    expect((await get(`/milestones/${n}`)).body).toMatchObject({ title: 'v2.0', state: 'open' });
    await t.upstream.openIssue({ title: 'Planned', user: 'dave', milestone: n }, { deliver: false });

    const edited = await t.upstream.editMilestone(n, { title: 'v2.0.0', description: 'Next major', dueOn: Date.UTC(2030, 5, 1) });
    expect(delivered(edited.deliveries, ['milestone.edited'])[0]?.changes).toEqual({ title: { from: 'v2.0' }, description: { from: 'Next' }, due_on: { from: '2030-01-01T00:00:00Z' } });
    expect((await get(`/milestones/${n}`)).body).toMatchObject({ title: 'v2.0.0', due_on: '2030-06-01T00:00:00Z' });
    const closed = await t.upstream.closeMilestone(n);
    expect(delivered(closed.deliveries, ['milestone.closed'])[0]?.milestone).toMatchObject({ state: 'closed', title: 'v2.0.0', open_issues: 1 });
    expect((await get(`/milestones/${n}`)).body).toMatchObject({ state: 'closed', closed_at: expect.any(String) });
    delivered((await t.upstream.reopenMilestone(n)).deliveries, ['milestone.opened']);

    delivered((await t.upstream.deleteMilestone(n)).deliveries, ['milestone.deleted']);
    expect((await get(`/milestones/${n}`)).status).toBe(404);
    expect((await all('/milestones?state=all')).map((m) => m.number)).not.toContain(n);
    expect((await all('/issues?state=all')).some((i) => i.milestone?.number === n)).toBe(false);
    // Numbers are never reused.
    expect((await t.upstream.createMilestone({ title: 'v3.0' }, { deliver: false })).milestone.number).toBe(n + 1);
  });
});

describe('FakeUpstream: releases', () => {
  it('publishes, edits and deletes a release', async () => {
    const published = await t.upstream.publishRelease({ tag: 'v2.0.0', name: 'Two', body: 'Notes' });
    const id = published.release.id;
    delivered(published.deliveries, ['release.created', 'release.published', 'release.released']);
    expect((await get(`/releases/${id}`)).body).toMatchObject({ tag_name: 'v2.0.0', draft: false });
    expect((await get('/releases/latest')).body.id).toBe(id);

    const edited = await t.upstream.editRelease(id, { name: 'Two!', body: 'Better notes' });
    expect(delivered(edited.deliveries, ['release.edited'])[0]?.changes).toEqual({ name: { from: 'Two' }, body: { from: 'Notes' } });
    expect((await get(`/releases/${id}`)).body.name).toBe('Two!');

    delivered((await t.upstream.deleteRelease(id)).deliveries, ['release.deleted']);
    expect((await get(`/releases/${id}`)).status).toBe(404);
    expect((await get('/releases/tags/v2.0.0')).status).toBe(404);
    expect((await all('/releases')).map((r) => r.id)).not.toContain(id);
  });

  it('publishes a pre-release, and a draft once it is made public', async () => {
    delivered((await t.upstream.publishRelease({ tag: 'v2.1.0-rc1', prerelease: true })).deliveries, ['release.created', 'release.published', 'release.prereleased']);
    const draft = await t.upstream.publishRelease({ tag: 'v2.1.0', draft: true });
    delivered(draft.deliveries, ['release.created']);
    const shown = await t.upstream.editRelease(draft.release.id, { draft: false });
    delivered(shown.deliveries, ['release.published', 'release.released']);
    expect((await get(`/releases/${draft.release.id}`)).body).toMatchObject({ draft: false, published_at: expect.any(String) });
  });
});

describe('FakeUpstream: collaborators and branch protection', () => {
  it('adds, edits and removes a collaborator (member added/edited/removed)', async () => {
    const added = await t.upstream.addCollaborator('grace', 'write');
    expect(delivered(added.deliveries, ['member.added'])[0]).toMatchObject({ member: { login: 'grace' }, changes: { permission: { to: 'write' } } });
    expect((await all('/collaborators')).find((c) => c.login === 'grace')).toMatchObject({ role_name: 'write' });
    const edited = await t.upstream.editCollaborator('grace', 'admin');
    expect(delivered(edited.deliveries, ['member.edited'])[0]?.changes).toMatchObject({ old_permission: { from: 'write' } });
    expect((await all('/collaborators')).find((c) => c.login === 'grace')).toMatchObject({ role_name: 'admin' });
    delivered((await t.upstream.removeCollaborator('grace')).deliveries, ['member.removed']);
    expect((await all('/collaborators')).map((c) => c.login)).not.toContain('grace');
  });

  it('unprotects and protects a branch (branch_protection_rule deleted/created/edited)', async () => {
    const removed = await t.upstream.unprotectBranch('release/1.x');
    expect(delivered(removed.deliveries, ['branch_protection_rule.deleted'])[0]?.rule).toMatchObject({ name: 'release/1.x', repository_id: t.fake.project.repo.id });
    expect((await get('/branches/release%2F1.x/protection')).status).toBe(404);
    expect((await all('/branches?protected=true')).map((b) => b.name)).not.toContain('release/1.x');

    const created = await t.upstream.protectBranch('release/1.x', { requiredApprovals: 3 });
    const [rule] = delivered(created.deliveries, ['branch_protection_rule.created']);
    expect(rule?.rule).toMatchObject({ name: 'release/1.x', required_approving_review_count: 3 });
    expect((await get('/branches/release%2F1.x/protection')).body.required_pull_request_reviews.required_approving_review_count).toBe(3);

    const edited = await t.upstream.protectBranch('release/1.x', { requiredApprovals: 1, linearHistory: true });
    const [change] = delivered(edited.deliveries, ['branch_protection_rule.edited']);
    expect(change?.changes).toEqual({ required_approving_review_count: { from: 3 }, linear_history_requirement_enforcement_level: { from: 'off' } });
    expect((change?.rule as { id: number }).id).toBe((rule?.rule as { id: number }).id);
  });
});

describe('FakeUpstream: the repository', () => {
  it('renames and transfers it: the new name answers, the old one 301 to /repositories/{id}', async () => {
    const own = await startFakeGitHub({ tokens: [t.token], git: false });
    const hooks = new FakeUpstream(own, { url: t.receiver.url, secret: t.secret });
    try {
      const { id } = own.project.repo;
      const renamed = await hooks.renameRepository('gadgets');
      const [payload] = expectDelivered(t.receiver, renamed.deliveries, ['repository.renamed'], id);
      expect(payload?.changes).toEqual({ repository: { name: { from: 'widgets' } } });
      expect(payload?.repository).toMatchObject({ id, name: 'gadgets', full_name: 'acme-org/gadgets', url: `${own.apiUrl}/repos/acme-org/gadgets` });

      const fresh = await api(`${own.apiUrl}/repos/acme-org/gadgets/issues/1`, { token: t.token });
      expect(fresh.body).toMatchObject({ number: 1, url: `${own.apiUrl}/repos/acme-org/gadgets/issues/1` });
      const moved = await api(`${own.apiUrl}/repos/acme-org/widgets/issues?state=all&per_page=5`, { token: t.token, redirect: 'manual' });
      expect(moved.status).toBe(301);
      const location = `${own.apiUrl}/repositories/${id}/issues?state=all&per_page=5`;
      expect(moved.headers.get('location')).toBe(location);
      expect(moved.body).toEqual({ message: 'Moved Permanently', url: location, documentation_url: expect.stringContaining('docs.github.com') });
      expect((await api(location, { token: t.token })).body).toHaveLength(5);
      // fetch follows GitHub's redirect like a client does.
      expect((await api(`${own.apiUrl}/repos/acme-org/widgets`, { token: t.token })).body).toMatchObject({ id, name: 'gadgets' });

      const transferred = await hooks.transferRepository('gizmo-corp');
      const [moving] = expectDelivered(t.receiver, transferred.deliveries, ['repository.transferred'], id);
      expect(moving?.changes).toMatchObject({ owner: { from: { organization: { login: 'acme-org' } } } });
      expect(moving?.repository).toMatchObject({ id, full_name: 'gizmo-corp/gadgets', owner: { login: 'gizmo-corp' } });
      expect((await api(`${own.apiUrl}/repos/gizmo-corp/gadgets`, { token: t.token })).body).toMatchObject({ id, full_name: 'gizmo-corp/gadgets' });
      for (const old of ['acme-org/widgets', 'acme-org/gadgets']) expect((await api(`${own.apiUrl}/repos/${old}/labels`, { token: t.token, redirect: 'manual' })).status).toBe(301);
      expect((await api(`${own.apiUrl}/repositories/${id}/labels`, { token: t.token })).status).toBe(200);
      expect((await api(`${own.apiUrl}/repos/acme-org/other`, { token: t.token, redirect: 'manual' })).status).toBe(404);
    } finally {
      await own.close();
    }
  });
});

describe('FakeUpstream: the repository with git', () => {
  it('serves git at the new name after a rename', async () => {
    const own = await startFakeGitHub({ tokens: [t.token] });
    try {
      await new FakeUpstream(own).renameRepository('gadgets');
      const refs = await fetch(`${own.webUrl}/acme-org/gadgets.git/info/refs?service=git-upload-pack`, { headers: { 'user-agent': 'git/2.43.0' } });
      expect(refs.status).toBe(200);
      expect(await refs.text()).toContain('refs/heads/main');
    } finally {
      await own.close();
    }
  });
});

describe('FakeUpstream: payloads', () => {
  it('compared every repository-wide event.action sent with @octokit/webhooks-examples', () => {
    expect([...compared].sort()).toEqual([
      'branch_protection_rule.created', 'branch_protection_rule.deleted', 'branch_protection_rule.edited', 'label.created', 'label.deleted', 'label.edited',
      'member.added', 'member.edited', 'milestone.closed', 'milestone.created', 'milestone.deleted', 'release.created', 'release.deleted', 'release.edited',
      'release.prereleased', 'release.published', 'release.released', 'repository.renamed', 'repository.transferred',
    ]);
    // The package has no example of these.
    expect([...withoutExample].sort()).toEqual(['member.removed', 'milestone.edited', 'milestone.opened']);
  });
});
