import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateProject, type FakeProject } from '../fake-github/index.js';
import { importFakeToCopy, type Answer, type FakeAndCopy } from './support/fake-vs-copy.js';

/*
 * Every documented list filter, order and direction of the GitHub-compatible
 * API, asked of the fake GitHub (which filters and orders as GitHub does)
 * and of forgesync's imported copy of it: the same items in the same order,
 * the same `Link` header, the same status for refused values.
 */

const DAY = 86_400_000;

/**
 * A generated project plus what the generator never makes: mentions, mixed-case labels, an undated milestone, a long-running pull,
 * and collaborators of every kind (an outside one with triage, an organisation member who reads), granted out of id order.
 */
function project(): FakeProject {
  const p = generateProject({ issues: 60, pulls: 24, users: 12, labels: 8, milestones: 4, releases: 1, seed: 11, owner: 'Acme-Org', name: 'lists' });
  p.createLabel('Zeta', 'aaaaaa');
  p.createLabel('alpha-2', 'bbbbbb');
  p.createLabel('Beta', 'cccccc');
  p.createMilestone({ title: 'someday', creator: 'dev-0001', dueOn: null });
  p.createIssue({ title: 'Mentions', body: 'cc @dev-0003, not `@dev-0005` nor mail a@dev-0006 nor @acme-org/core', user: 'dev-0002' });
  p.addComment(5, { user: 'dev-0001', body: 'ping @DEV-0004 please' });
  p.addComment(7, { user: 'dev-0001', body: '```\n@dev-0004 in code\n```' });
  // Created 40 days ago, active 2 days ago: what `sort=long-running` keeps (last, so numbers and creation times keep one order).
  const old = p.createIssue({ title: 'Old pull', body: 'x', user: 'dev-0002', at: Date.now() - 40 * DAY, pull: { headRef: 'Feature/Old' } });
  p.addComment(old.number, { user: 'dev-0001', body: 'still going', at: Date.now() - 2 * DAY });
  p.collaborators.push({ login: 'dev-0010', permission: 'triage', direct: true, outside: true }, { login: 'dev-0007', permission: 'read', direct: false });
  return p;
}

/**
 * What a list answer is compared by: status, the items' ids (in order) and the Link header's relations and
 * queries (the path form of its URLs, `/repos/{o}/{r}` or `/repositories/{id}`, is the links' own concern).
 */
function shape(answer: Answer): { status: number; ids: unknown; links: string[] | undefined } {
  const ids = Array.isArray(answer.body) ? answer.body.map((item: { id?: unknown; name?: unknown }) => item.id ?? item.name) : undefined;
  const links = answer.headers.link?.split(', ').map((part) => {
    const [, url, rel] = /^<([^>]+)>; rel="(\w+)"$/.exec(part) ?? [];
    return `${rel} ${url ? new URL(url).search : part}`;
  });
  return { status: answer.status, ids, links };
}

describe('GitHub-compatible API: list filters and orders, as GitHub (the fake) answers them', () => {
  let pair: FakeAndCopy;
  const repo = '/repos/Acme-Org/lists';

  beforeAll(async () => {
    pair = await importFakeToCopy({ project: project() });
  }, 180_000);
  afterAll(async () => {
    await pair?.close();
  });

  async function same(path: string): Promise<Answer> {
    const { fake, copy } = await pair.both(`${repo}${path}`);
    expect(shape(copy), path).toEqual(shape(fake));
    expect(fake.status, path).toBeLessThan(500);
    return copy;
  }

  it('issues: state, sort and direction in every combination, with pages', async () => {
    for (const state of ['open', 'closed', 'all']) {
      for (const sort of ['created', 'updated', 'comments']) {
        for (const direction of ['asc', 'desc']) await same(`/issues?state=${state}&sort=${sort}&direction=${direction}&per_page=100`);
      }
    }
    await same('/issues');
    await same('/issues?state=all&per_page=7&page=3');
    await same('/issues?state=all&sort=comments&per_page=10&page=2');
    const all = await same('/issues?state=all&per_page=100');
    expect((all.body as unknown[]).length).toBe(86);
  });

  it('issues: milestone (number, *, none), assignee (login, *, none), creator, mentioned, labels, since', async () => {
    for (const milestone of ['1', '2', '*', 'none']) expect((await same(`/issues?state=all&milestone=${milestone}&per_page=100`)).status).toBe(200);
    const withMilestone = await same('/issues?state=all&milestone=*&per_page=100');
    expect((withMilestone.body as unknown[]).length).toBeGreaterThan(0);
    for (const assignee of ['dev-0001', 'DEV-0002', '*', 'none', 'nobody-here']) await same(`/issues?state=all&assignee=${assignee}&per_page=100`);
    for (const creator of ['dev-0002', 'Dev-0003', 'nobody-here']) await same(`/issues?state=all&creator=${creator}&per_page=100`);
    const byCreator = await same('/issues?state=all&creator=dev-0002&sort=updated&direction=asc');
    expect((byCreator.body as { user: { login: string } }[]).every((issue) => issue.user.login === 'dev-0002')).toBe(true);
    for (const mentioned of ['dev-0003', 'dev-0004', 'dev-0005', 'dev-0006', 'acme-org']) await same(`/issues?state=all&mentioned=${mentioned}`);
    expect(((await same('/issues?state=all&mentioned=dev-0003')).body as { title: string }[]).map((i) => i.title)).toEqual(['Mentions']);
    expect(((await same('/issues?state=all&mentioned=dev-0004')).body as { number: number }[]).map((i) => i.number)).toEqual([5]);
    await same('/issues?state=all&labels=bug&per_page=100');
    await same('/issues?state=all&labels=bug,enhancement&per_page=100');
    await same('/issues?state=all&since=2019-01-10T00:00:00Z&sort=updated&per_page=100');
    await same('/issues?state=closed&milestone=*&assignee=*&sort=updated&direction=asc');
  });

  it('pulls: state, head (owner:ref), base, and sort created|updated|popularity|long-running in both directions', async () => {
    for (const state of ['open', 'closed', 'all']) {
      for (const sort of ['created', 'updated', 'popularity', 'long-running']) {
        await same(`/pulls?state=${state}&sort=${sort}&per_page=100`);
        for (const direction of ['asc', 'desc']) await same(`/pulls?state=${state}&sort=${sort}&direction=${direction}&per_page=100`);
      }
    }
    const longRunning = await same('/pulls?sort=long-running');
    expect((longRunning.body as { title: string }[]).map((p) => p.title)).toEqual(['Old pull']);
    const pulls = (await pair.fake(`${repo}/pulls?state=all&per_page=3`)).body as { head: { label: string; ref: string } }[];
    const label = (pulls[1] as { head: { label: string } }).head.label;
    for (const head of [label, label.toUpperCase().split(':')[0] + ':' + label.split(':')[1], 'acme-org:Feature/Old', 'acme-org:feature/old', 'Feature/Old', 'nobody:main']) {
      await same(`/pulls?state=all&head=${encodeURIComponent(head)}`);
    }
    expect(((await same('/pulls?state=all&head=acme-org:Feature/Old')).body as unknown[]).length).toBe(1);
    for (const base of ['main', 'release/1.x']) await same(`/pulls?state=all&base=${encodeURIComponent(base)}&per_page=100`);
  });

  it('labels by name whatever the case; milestones by due date (undated last both ways) or completeness', async () => {
    const labels = await same('/labels?per_page=100');
    expect((labels.body as { name: string }[]).map((l) => l.name).slice(0, 3)).toEqual(['alpha-2', 'Beta', 'bug']);
    await same('/labels?per_page=4&page=2');
    for (const state of ['open', 'closed', 'all']) {
      for (const sort of ['due_on', 'completeness']) {
        for (const direction of ['asc', 'desc']) await same(`/milestones?state=${state}&sort=${sort}&direction=${direction}`);
      }
    }
    const desc = await same('/milestones?state=all&direction=desc');
    expect((desc.body as { title: string }[]).at(-1)?.title).toBe('someday');
  });

  it('collaborators: every affiliation (all by default) with every permission, in pages', async () => {
    const logins = async (path: string) => ((await same(path)).body as { login: string }[]).map((c) => c.login);
    for (const affiliation of ['', 'affiliation=all', 'affiliation=direct', 'affiliation=outside']) {
      await same(`/collaborators?${affiliation}`);
      for (const permission of ['pull', 'triage', 'push', 'maintain', 'admin']) await same(`/collaborators?${affiliation}&permission=${permission}`);
    }
    // Organisation members with access are listed only by `all`; `outside` only the direct collaborators who are no members.
    expect(await logins('/collaborators')).toEqual(['dev-0001', 'dev-0002', 'dev-0003', 'dev-0004', 'dev-0005', 'dev-0007', 'dev-0010']);
    expect(await logins('/collaborators?affiliation=direct')).toEqual(['dev-0001', 'dev-0002', 'dev-0004', 'dev-0005', 'dev-0010']);
    expect(await logins('/collaborators?affiliation=outside')).toEqual(['dev-0005', 'dev-0010']);
    expect(await logins('/collaborators?permission=push')).toEqual(['dev-0001', 'dev-0002', 'dev-0003', 'dev-0004', 'dev-0005']);
    expect(await logins('/collaborators?affiliation=outside&permission=triage')).toEqual(['dev-0005', 'dev-0010']);
    expect(await logins('/collaborators?permission=maintain')).toEqual(['dev-0001', 'dev-0002']);
    for (const page of [1, 2, 3, 4]) await same(`/collaborators?per_page=2&page=${page}`);
    await same('/collaborators?affiliation=direct&permission=pull&per_page=3&page=2');
  });

  it('comment lists: sort, direction (only with sort) and since', async () => {
    for (const list of ['/issues/comments', '/pulls/comments']) {
      await same(`${list}?per_page=100`);
      await same(`${list}?direction=desc&per_page=100`);
      for (const sort of ['created', 'updated']) {
        for (const direction of ['asc', 'desc']) await same(`${list}?sort=${sort}&direction=${direction}&per_page=100&page=2`);
      }
      await same(`${list}?since=2019-01-12T00:00:00Z&per_page=100`);
    }
    await same('/issues/5/comments');
  });

  it('hostile values: GitHub clamps pages and refuses unknown values with 422', async () => {
    for (const query of ['per_page=0', 'per_page=1000', 'page=-1', 'page=0&per_page=5', 'page=99999999&per_page=100', 'per_page=abc', 'page=abc&per_page=5', 'per_page=5x']) await same(`/issues?state=all&${query}`);
    for (const query of ['milestone=abc', 'milestone=999', 'sort=evil', 'state=bogus', 'direction=up']) expect((await same(`/issues?${query}`)).status).toBe(422);
    for (const query of ['sort=evil', 'state=merged']) expect((await same(`/pulls?${query}`)).status).toBe(422);
    expect((await same('/milestones?sort=title')).status).toBe(422);
    expect((await same('/collaborators?permission=write')).status).toBe(422);
    expect((await same('/collaborators?affiliation=members')).status).toBe(422);
  });

  // Last: it changes the project.
  it('collaborators: a sync drops those whose access was removed, and what each list says of the others', async () => {
    const project = pair.harness.fake.project;
    const remove = (login: string) => project.collaborators.splice(project.collaborators.findIndex((c) => c.login === login), 1);
    remove('dev-0010');
    remove('dev-0003');
    // dev-0002 loses its direct access but keeps the organisation's.
    const kept = project.collaborators.find((c) => c.login === 'dev-0002')!;
    kept.direct = false;
    await pair.resync();
    const logins = async (path: string) => ((await same(path)).body as { login: string }[]).map((c) => c.login);
    expect(await logins('/collaborators')).toEqual(['dev-0001', 'dev-0002', 'dev-0004', 'dev-0005', 'dev-0007']);
    expect(await logins('/collaborators?affiliation=direct')).toEqual(['dev-0001', 'dev-0004', 'dev-0005']);
    expect(await logins('/collaborators?affiliation=outside')).toEqual(['dev-0005']);
    for (const permission of ['triage', 'maintain']) await same(`/collaborators?permission=${permission}`);
    // Unchanged since: the three lists answer 304, and what they gave last time stays.
    pair.harness.fake.clearLog();
    await pair.resync();
    const asked = pair.harness.fake.requests.filter((entry) => entry.path.endsWith('/collaborators'));
    expect(asked.map((entry) => entry.notModified)).toEqual([true, true, true]);
    expect(await logins('/collaborators?affiliation=direct')).toEqual(['dev-0001', 'dev-0004', 'dev-0005']);
    expect(await logins('/collaborators?affiliation=outside')).toEqual(['dev-0005']);
    expect((await logins('/collaborators')).length).toBe(5);
  });
});

describe('GitHub-compatible API: list filters on PostgreSQL', () => {
  let pair: FakeAndCopy;
  const repo = '/repos/Acme-Org/lists';

  beforeAll(async () => {
    pair = await importFakeToCopy({ project: project(), database: 'postgres' });
  }, 180_000);
  afterAll(async () => {
    await pair?.close();
  });

  it('filters, orders and pages as the fake does', async () => {
    for (const path of [
      '/issues?state=all&sort=comments&direction=asc&per_page=10&page=3',
      '/issues?state=all&milestone=*&assignee=none&creator=dev-0002',
      '/issues?state=all&mentioned=dev-0004',
      '/issues?state=all&labels=bug&sort=updated',
      '/pulls?state=all&sort=popularity&direction=desc&per_page=100',
      '/pulls?sort=long-running',
      '/pulls?state=all&head=ACME-ORG:Feature/Old',
      '/labels?per_page=100',
      '/milestones?state=all&sort=due_on&direction=desc',
      '/collaborators?per_page=3&page=2',
      '/collaborators?affiliation=direct&permission=push',
      '/collaborators?affiliation=outside&permission=triage',
    ]) {
      const { fake, copy } = await pair.both(`${repo}${path}`);
      expect(shape(copy), path).toEqual(shape(fake));
      expect(fake.status, path).toBe(200);
    }
  });
});
