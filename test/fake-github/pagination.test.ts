import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateProject } from './generate.js';
import type { Json } from './payloads.js';
import { startFakeGitHub, type FakeGitHub } from './server.js';
import { api, pages, parseLink } from './walk.js';

const TOKEN = 'page-token';
let fake: FakeGitHub;
let repo: string;

beforeAll(async () => {
  // 250 issues + 60 pulls; the page cap is small so the 422 is reachable.
  fake = await startFakeGitHub({ project: generateProject({ issues: 250, pulls: 60, commentsPerIssue: 2, reviewCommentsPerPull: 3, reviewsPerPull: 2, users: 30, seed: 7 }), tokens: [TOKEN], git: false, pageCapItems: 300 });
  repo = `${fake.apiUrl}/repos/acme-org/bigrepo`;
});

afterAll(async () => {
  await fake?.close();
});

const get = (path: string) => api(path.startsWith('http') ? path : `${repo}${path}`, { token: TOKEN });

describe('pagination', () => {
  it('defaults to 30 per page, caps per_page at 100, and formats Link as GitHub does', async () => {
    const first = await get('/issues?state=all');
    expect(first.body).toHaveLength(30);
    const big = await get('/issues?state=all&per_page=500');
    expect(big.body).toHaveLength(100);
    const link = first.headers.get('link') as string;
    const id = fake.project.repo.id;
    expect(link).toBe(`<${fake.apiUrl}/repositories/${id}/issues?state=all&page=2>; rel="next", <${fake.apiUrl}/repositories/${id}/issues?state=all&page=11>; rel="last"`);
    const middle = await get('/issues?state=all&per_page=100&page=2');
    expect(Object.keys(parseLink(middle.headers.get('link')))).toEqual(['prev', 'next', 'last', 'first']);
    expect(parseLink(middle.headers.get('link')).prev).toBe(`${fake.apiUrl}/repositories/${id}/issues?state=all&per_page=100&page=1`);
    const last = await get('/issues?state=all&per_page=100&page=4');
    expect(last.body).toHaveLength(10);
    expect(Object.keys(parseLink(last.headers.get('link')))).toEqual(['prev', 'first']);
    const beyond = await get('/issues?state=all&per_page=100&page=9');
    expect(beyond.status).toBe(200);
    expect(beyond.body).toEqual([]);
  });

  it('a single page has no Link header, and the /repositories/{id} links are served', async () => {
    const labels = await get('/labels');
    expect(labels.headers.get('link')).toBeNull();
    const viaId = await pages(`${fake.apiUrl}/repositories/${fake.project.repo.id}/issues?state=all&per_page=100`, TOKEN);
    expect(viaId.items).toHaveLength(310);
    expect(viaId.requests).toBe(4);
    expect(new Set(viaId.items.map((i: Json) => i.number)).size).toBe(310);
  });

  it('claims a last page it does not have when asked (claimLastPage), with true next links', async () => {
    const other = await startFakeGitHub({ git: false, linkStyle: 'repos', tokens: [TOKEN], claimLastPage: 1_000_000_000 });
    try {
      const base = `${other.apiUrl}/repos/acme-org/widgets`;
      const labels = await api(`${base}/labels`, { token: TOKEN });
      expect(parseLink(labels.headers.get('link'))).toEqual({ last: `${base}/labels?page=1000000000` });
      const first = parseLink((await api(`${base}/issues?state=all&per_page=5`, { token: TOKEN })).headers.get('link'));
      expect(first.next).toBe(`${base}/issues?state=all&per_page=5&page=2`);
      expect(first.last).toBe(`${base}/issues?state=all&per_page=5&page=1000000000`);
      const walked = await pages(`${base}/issues?state=all&per_page=5`, TOKEN);
      expect(walked.items).toHaveLength(other.project.issues.length);
    } finally {
      await other.close();
    }
  });

  it('links in repos style when asked', async () => {
    const other = await startFakeGitHub({ git: false, linkStyle: 'repos', tokens: [TOKEN] });
    try {
      const answer = await api(`${other.apiUrl}/repos/acme-org/widgets/issues?state=all&per_page=5&sort=updated`, { token: TOKEN });
      expect(parseLink(answer.headers.get('link')).next).toBe(`${other.apiUrl}/repos/acme-org/widgets/issues?state=all&per_page=5&sort=updated&page=2`);
    } finally {
      await other.close();
    }
  });

  it('answers 422 past the page cap of the repo-wide comment and event lists only', async () => {
    for (const path of ['/issues/comments', '/issues/events', '/pulls/comments']) {
      expect((await get(`${path}?per_page=100&page=3`)).status).toBe(200);
      const capped = await get(`${path}?per_page=100&page=4`);
      expect(capped.status).toBe(422);
      expect(capped.body.message).toBe('Pagination with the page parameter is not supported for large datasets, please use cursor based pagination (after/before)');
      expect(capped.body.status).toBe('422');
      expect(capped.body.documentation_url).toMatch(/^https:\/\/docs\.github\.com\//);
      expect((await get(`${path}?per_page=30&page=10`)).status).toBe(200);
      expect((await get(`${path}?per_page=30&page=11`)).status).toBe(422);
    }
    expect((await get('/issues?state=all&per_page=100&page=4')).status).toBe(200);
  });
});

describe('filters and sort orders', () => {
  it('issues: open by default, newest first, with pull requests marked', async () => {
    const all = (await pages(`${repo}/issues?state=all&per_page=100`, TOKEN)).items;
    const open = (await pages(`${repo}/issues?per_page=100`, TOKEN)).items;
    expect(open.length).toBe(fake.project.issues.filter((i) => i.state === 'open').length);
    expect(open.every((i: Json) => i.state === 'open')).toBe(true);
    expect(all.map((i: Json) => i.number)).toEqual([...all.map((i: Json) => i.number)].sort((a, b) => b - a));
    expect(all.filter((i: Json) => i.pull_request).length).toBe(60);
    const closed = (await pages(`${repo}/issues?state=closed&sort=updated&direction=asc&per_page=100`, TOKEN)).items;
    const stamps = closed.map((i: Json) => Date.parse(i.updated_at));
    expect(stamps).toEqual([...stamps].sort((a, b) => a - b));
    expect(closed.every((i: Json) => i.state === 'closed')).toBe(true);
  });

  it('issues: since keeps updated_at >= since, labels must all match', async () => {
    const all = (await pages(`${repo}/issues?state=all&per_page=100`, TOKEN)).items;
    const cut = [...all.map((i: Json) => i.updated_at)].sort()[200] as string;
    const since = (await pages(`${repo}/issues?state=all&per_page=100&since=${cut}`, TOKEN)).items;
    expect(since.length).toBe(all.filter((i: Json) => i.updated_at >= cut).length);
    expect(since.length).toBeGreaterThan(0);
    const label = fake.project.labels[0]?.name as string;
    const labelled = (await pages(`${repo}/issues?state=all&per_page=100&labels=${encodeURIComponent(label)}`, TOKEN)).items;
    expect(labelled.length).toBe(fake.project.issues.filter((i) => i.labels.includes(label)).length);
    expect(labelled.every((i: Json) => i.labels.some((l: Json) => l.name === label))).toBe(true);
  });

  it('pulls: list items lack merged_by and the counts; the single pull has them', async () => {
    const pulls = (await pages(`${repo}/pulls?state=all&per_page=100`, TOKEN)).items;
    expect(pulls).toHaveLength(60);
    for (const key of ['merged_by', 'comments', 'review_comments', 'commits', 'additions']) expect(pulls[0]).not.toHaveProperty(key);
    const merged = fake.project.pulls.find((p) => p.pull?.merged);
    const single = (await get(`/pulls/${merged?.number}`)).body;
    expect(single.merged_by.login).toBe(merged?.pull?.mergedBy);
    expect(single.review_comments).toBe(3);
    const open = (await get('/pulls?per_page=100')).body as Json[];
    expect(open.length).toBe(fake.project.pulls.filter((p) => p.state === 'open').length);
    const popular = (await get('/pulls?state=all&sort=popularity&direction=desc&per_page=100')).body as Json[];
    const counts = popular.map((p: Json) => fake.project.issue(p.number).comments);
    expect(counts).toEqual([...counts].sort((a, b) => b - a));
  });

  it('repo-wide comments ascend by default; sort=updated + since gets past the page cap', async () => {
    const first = (await get('/issues/comments?per_page=100')).body as Json[];
    const ids = first.map((c: Json) => c.id);
    expect(ids).toEqual([...ids].sort((a, b) => a - b));
    expect(ids[0]).toBe(fake.project.comments[0]?.id);
    const desc = (await get('/issues/comments?sort=created&direction=desc&per_page=5')).body as Json[];
    expect(desc[0].id).toBe(fake.project.comments.at(-1)?.id);
    // 620 comments, cap 300: page until 422, then restart from the last updated_at seen.
    const seen = new Map<number, Json>();
    let since: string | undefined;
    let restarts = 0;
    for (let done = false; !done; restarts++) {
      let last: Json | undefined;
      for (let page = 1; ; page++) {
        const answer = await get(`/issues/comments?sort=updated&direction=asc&per_page=100&page=${page}${since ? `&since=${since}` : ''}`);
        if (answer.status === 422) break;
        for (const c of answer.body as Json[]) {
          if (since !== undefined) expect(c.updated_at >= since).toBe(true);
          seen.set(c.id, c);
          last = c;
        }
        if (!parseLink(answer.headers.get('link')).next) {
          done = true;
          break;
        }
      }
      since = last?.updated_at;
    }
    expect(seen.size).toBe(fake.project.comments.length);
    expect(restarts).toBeGreaterThan(1);
  });

  it('repo-wide events come newest first; per-issue events and comments oldest first', async () => {
    const events = (await get('/issues/events?per_page=100')).body as Json[];
    const ids = events.map((e: Json) => e.id);
    expect(ids).toEqual([...ids].sort((a, b) => b - a));
    expect(ids[0]).toBe(fake.project.events.at(-1)?.id);
    const busy = fake.project.issues.find((i) => (fake.project.eventsByIssue.get(i.number)?.length ?? 0) > 2 && i.comments > 1);
    const perIssue = (await get(`/issues/${busy?.number}/events`)).body as Json[];
    expect(perIssue.map((e: Json) => e.id)).toEqual(fake.project.eventsByIssue.get(busy?.number as number)?.map((e) => e.id));
    expect(perIssue[0]).not.toHaveProperty('issue');
    const perComments = (await get(`/issues/${busy?.number}/comments`)).body as Json[];
    expect(perComments).toHaveLength(busy?.comments as number);
  });

  it('milestones are open by default; branches filter protected; collaborators filter direct', async () => {
    const open = (await get('/milestones')).body as Json[];
    const all = (await get('/milestones?state=all')).body as Json[];
    expect(open.length).toBe(fake.project.milestones.filter((m) => m.state === 'open').length);
    expect(all.length).toBe(fake.project.milestones.length);
    expect(all.length).toBeGreaterThan(open.length);
    const protectedOnly = (await get('/branches?protected=true')).body as Json[];
    expect(protectedOnly.map((b: Json) => b.name)).toEqual(['main', 'release/1.x']);
    const branches = (await pages(`${repo}/branches?per_page=100`, TOKEN)).items;
    expect(branches.length).toBeGreaterThan(2);
    const unprotected = branches.find((b: Json) => !b.protected);
    expect((await get(`/branches/${encodeURIComponent(unprotected.name)}/protection`)).body.message).toBe('Branch not protected');
    expect((await get('/branches/release/1.x/protection')).status).toBe(200);
    const collaborators = (await get('/collaborators')).body as Json[];
    const direct = (await get('/collaborators?affiliation=direct')).body as Json[];
    expect(collaborators.length).toBe(fake.project.collaborators.length);
    expect(direct.length).toBe(fake.project.collaborators.filter((c) => c.direct).length);
    expect(direct.length).toBeLessThan(collaborators.length);
  });

  it('404s: unknown issue, an issue asked as a pull, deleted and unknown users, another repository', async () => {
    expect((await get('/issues/99999')).status).toBe(404);
    const issueOnly = fake.project.issues.find((i) => !i.pull);
    const asPull = await get(`/pulls/${issueOnly?.number}`);
    expect(asPull.status).toBe(404);
    expect(asPull.body).toMatchObject({ message: 'Not Found', status: '404' });
    const deleted = [...fake.project.users.values()].find((u) => u.deleted);
    expect((await api(`${fake.apiUrl}/users/${deleted?.login}`, { token: TOKEN })).status).toBe(404);
    expect((await api(`${fake.apiUrl}/users/ghost`, { token: TOKEN })).status).toBe(404);
    expect((await api(`${fake.apiUrl}/users/dev-0001`, { token: TOKEN })).status).toBe(200);
    expect((await api(`${fake.apiUrl}/repos/acme-org/other`, { token: TOKEN })).status).toBe(404);
  });
});
