import { describe, expect, it } from 'vitest';
import { generateProject } from './generate.js';
import type { Json } from './payloads.js';
import { FakeProject } from './project.js';
import { startFakeGitHub } from './server.js';
import { api, pages, walk } from './walk.js';

describe('expected() and budget() agree with a walk of the fake', () => {
  it('for the small project', async () => {
    const project = FakeProject.small();
    const fake = await startFakeGitHub({ project, tokens: ['w'], git: false });
    try {
      const expected = fake.expected();
      expect(expected).toMatchObject({
        issue: 12, pull_request: 6, note: 40, diff_note: 20, pull_request_review: 8, pull_request_merged_by: 2, label: 5, milestone: 2,
        release: 3, release_asset: 4, attachment: 4, collaborator: 3, protected_branch: 2, missingUsers: ['ghost'],
      });
      const result = await walk(fake, 'w');
      const { users, missingUsers, attachmentPaths: _paths, attachmentUrls, collaboratorDirect: _direct, ...counts } = expected;
      expect(result.counts).toEqual(counts);
      expect(result.users).toEqual(users);
      expect(result.missingUsers).toEqual(missingUsers);
      expect(result.attachmentUrls).toEqual(attachmentUrls);
      expect(result.requests).toBe(fake.budget({ perPage: 100 }));
      expect(fake.stats().counted).toBe(result.requests);
      // The foreign link is in a body but is not an expected attachment.
      const issue1 = (await api(`${fake.apiUrl}/repos/acme-org/widgets/issues/1`, { token: 'w' })).body;
      expect(issue1.body).toContain(`${fake.foreignUrl}/evil/tracker.png`);
      expect(issue1.body.match(/user-attachments\/assets\/3f6c2a8e/g)).toHaveLength(1);
      expect(attachmentUrls.filter((u) => u.includes('3f6c2a8e'))).toHaveLength(1);
    } finally {
      await fake.close();
    }
  });

  it('for a generated project (several pages everywhere)', async () => {
    const project = generateProject({ issues: 300, pulls: 80, commentsPerIssue: 1.5, reviewCommentsPerPull: 4, reviewsPerPull: 2, users: 45, seed: 3, attachmentEvery: 50 });
    const fake = await startFakeGitHub({ project, tokens: ['w'], git: false });
    try {
      const expected = fake.expected();
      expect(expected.note).toBe(570);
      expect(expected.diff_note).toBe(320);
      expect(expected.pull_request_review).toBe(160);
      expect(expected.missingUsers).toEqual(['ghost']);
      const result = await walk(fake, 'w');
      const { users, missingUsers, attachmentPaths: _paths, attachmentUrls, collaboratorDirect: _direct, ...counts } = expected;
      expect(result.counts).toEqual(counts);
      expect(result.users).toEqual(users);
      expect(result.missingUsers).toEqual(missingUsers);
      expect(result.attachmentUrls).toEqual(attachmentUrls);
      expect(result.requests).toBe(fake.budget());
      expect(fake.budget({ perPage: 30 })).toBeGreaterThan(fake.budget({ perPage: 100 }));
    } finally {
      await fake.close();
    }
  });
});

describe('the project model', () => {
  it('is deterministic per seed and consistent in its counts', () => {
    const a = generateProject({ issues: 120, pulls: 30, seed: 11 });
    const b = generateProject({ issues: 120, pulls: 30, seed: 11 });
    const c = generateProject({ issues: 120, pulls: 30, seed: 12 });
    expect(JSON.stringify(a.issues)).toBe(JSON.stringify(b.issues));
    expect(JSON.stringify(a.comments)).toBe(JSON.stringify(b.comments));
    expect(JSON.stringify(a.issues)).not.toBe(JSON.stringify(c.issues));
    expect(a.pulls).toHaveLength(30);
    expect(a.issues).toHaveLength(150);
    for (const issue of a.issues) expect(issue.comments).toBe(a.commentsByIssue.get(issue.number)?.length ?? 0);
    const stamps = [...a.issues.map((i) => i.createdAt)];
    expect(stamps).toEqual([...stamps].sort((x, y) => x - y));
    expect(new Set(stamps).size).toBe(stamps.length);
    const commentStamps = a.comments.map((x) => x.createdAt);
    expect(new Set(commentStamps).size).toBe(commentStamps.length);
    for (const rc of a.reviewComments) if (rc.inReplyTo !== null) expect(a.reviewCommentById.get(rc.inReplyTo)?.inReplyTo).toBeNull();
  });

  it('mutations bump updated_at, add events, and show up through since', async () => {
    const project = FakeProject.small();
    const fake = await startFakeGitHub({ project, tokens: ['m'], git: false });
    try {
      const repo = `${fake.apiUrl}/repos/acme-org/widgets`;
      const before = new Date().toISOString().replace(/\.\d+Z$/, 'Z');
      const beforeCounts = project.expected();
      const created = project.addIssue({ title: 'New problem', user: 'dave', labels: ['bug'] });
      expect(created.number).toBe(19);
      project.comment(2, 'Another comment', 'erin');
      project.editIssue(4, { title: 'Renamed problem' });
      project.closeIssue(2, 'alice');
      project.addLabel(9, 'documentation');
      project.mergePull(5, 'alice');
      project.addReview({ pull: 14, user: 'carol', state: 'APPROVED', comments: [{ path: 'src/a.txt', line: 2, body: 'ok' }] });
      const after = project.expected();
      expect(after.issue).toBe(beforeCounts.issue + 1);
      expect(after.note).toBe(beforeCounts.note + 1);
      expect(after.pull_request_merged_by).toBe(beforeCounts.pull_request_merged_by + 1);
      expect(after.pull_request_review).toBe(beforeCounts.pull_request_review + 1);
      expect(after.diff_note).toBe(beforeCounts.diff_note + 1);
      expect(after.pull_request_review_request).toBe(beforeCounts.pull_request_review_request - 1);
      const changed = (await pages(`${repo}/issues?state=all&since=${before}&per_page=100`, 'm')).items.map((i: Json) => i.number).sort((x: number, y: number) => x - y);
      expect(changed).toEqual([2, 4, 5, 9, 14, 19]);
      const comments = (await pages(`${repo}/issues/comments?since=${before}`, 'm')).items;
      expect(comments.map((c: Json) => c.body)).toEqual(['Another comment']);
      const events = (await api(`${repo}/issues/events?per_page=10`, { token: 'm' })).body as Json[];
      expect(events.slice(0, 3).map((e: Json) => e.event)).toEqual(['head_ref_deleted', 'closed', 'merged']);
      expect(events[2].actor.login).toBe('alice');
      const renamed = (await api(`${repo}/issues/4/events`, { token: 'm' })).body as Json[];
      expect(renamed.at(-1)).toMatchObject({ event: 'renamed', rename: { from: 'Widget problem 4', to: 'Renamed problem' } });
      const two = (await api(`${repo}/issues/2`, { token: 'm' })).body;
      expect(two).toMatchObject({ state: 'closed', comments: 3, closed_by: { login: 'alice' } });
      expect(Date.parse(two.updated_at)).toBeGreaterThanOrEqual(Date.parse(before));
      const pull = (await api(`${repo}/pulls/5`, { token: 'm' })).body;
      expect(pull).toMatchObject({ merged: true, state: 'closed', merged_by: { login: 'alice' } });
    } finally {
      await fake.close();
    }
  });

  it('scales: 20 000 issues and 100 000 comments, pages served quickly', async () => {
    const started = Date.now();
    const project = generateProject({ issues: 20_000, pulls: 0, commentsPerIssue: 5, users: 200, seed: 5, releases: 0 });
    const built = Date.now() - started;
    expect(project.comments).toHaveLength(100_000);
    const fake = await startFakeGitHub({ project, tokens: ['s'], git: false });
    try {
      const repo = `${fake.apiUrl}/repos/acme-org/bigrepo`;
      let t = Date.now();
      const first = await api(`${repo}/issues/comments?per_page=100&page=350`, { token: 's' });
      const firstMs = Date.now() - t;
      t = Date.now();
      for (let page = 351; page <= 360; page++) expect((await api(`${repo}/issues/comments?per_page=100&page=${page}`, { token: 's' })).body).toHaveLength(100);
      const tenPagesMs = Date.now() - t;
      expect(first.body).toHaveLength(100);
      const issues = await api(`${repo}/issues?state=all&sort=updated&per_page=100&page=150`, { token: 's' });
      expect(issues.body).toHaveLength(100);
      expect(built).toBeLessThan(6000);
      expect(firstMs).toBeLessThan(1000);
      expect(tenPagesMs).toBeLessThan(1500);
    } finally {
      await fake.close();
    }
  });
});
