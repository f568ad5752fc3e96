import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LogEntry } from '../fake-github/index.js';
import { pullOf } from '../fake-github/project.js';
import { api } from '../fake-github/walk.js';
import { credentialNames, startImportHarness, type ImportHarness } from './harness.js';

/*
 * GitHub's single pull request (`GET /pulls/{n}`) has fields its list
 * items lack (`commits`, `additions`, `mergeable`, …): the importer fetches
 * it in each pull request's job, one GET per pull request on a full
 * import, one per changed pull request on a sync, and stores it as the
 * `pull_request` row. The fake's request log is the measure.
 */

/** The fields only the single object has. */
const SINGLE_ONLY = ['merged', 'mergeable', 'rebaseable', 'mergeable_state', 'merged_by', 'comments', 'review_comments', 'maintainer_can_modify', 'commits', 'additions', 'deletions', 'changed_files'];

/** The pull request number of a `GET /pulls/{n}` request, else undefined. */
function singlePullNumber(entry: LogEntry): number | undefined {
  const match = /\/pulls\/(\d+)$/.exec(entry.path);
  return entry.host === 'api' && entry.method === 'GET' && match ? Number(match[1]) : undefined;
}

/** The numbers of the `GET /pulls/{n}` requests in the fake's log answered `status`, sorted. */
function singlePullsAnswered(h: ImportHarness, status: number): number[] {
  return h.fake.requests.filter((entry) => entry.status === status).flatMap((entry) => singlePullNumber(entry) ?? []).sort((a, b) => a - b);
}

/** The stored `pull_request` rows' JSON, by number. */
async function storedPulls(h: ImportHarness): Promise<Map<number, any>> {
  const rows = await h.app.kernel.database.db.selectFrom('import_objects').select(['number', 'data']).where('type', '=', 'pull_request').execute();
  return new Map(rows.map((row) => [Number(row.number), JSON.parse(row.data)]));
}

/** The fake's single object of pull request `number` (asked outside the import; clears the log after). */
async function fakeSingle(h: ImportHarness, number: number): Promise<any> {
  const { owner, name } = h.fake.project.repo;
  const answer = await api(`${h.fake.apiUrl}/repos/${owner}/${name}/pulls/${number}`, { token: h.token });
  expect(answer.status).toBe(200);
  return answer.body;
}

async function syncHere(h: ImportHarness, name: string) {
  h.fake.clearLog();
  await h.app.importer.requestSync(name);
  const { outcome } = await h.app.importer.runHere(name);
  expect(outcome).toBe('synced');
  return h.app.importer.status(name);
}

describe.each(['sqlite', 'postgres'] as const)('pull requests stored as GitHub\'s single object, on %s', (database) => {
  let h: ImportHarness;
  let name: string;
  let numbers: number[];

  beforeAll(async () => {
    h = await startImportHarness({ database });
    numbers = h.fake.project.pulls.map((pull) => pull.number).sort((a, b) => a - b);
    const record = await h.app.importer.create({ project: h.project, apiUrl: h.fake.apiUrl, credentials: credentialNames(1) });
    name = record.name;
    const { outcome } = await h.app.importer.runHere(name);
    expect(outcome).toBe('synced');
  });
  afterAll(async () => h?.close());

  it('asks each pull request once on a full import, in the budget', async () => {
    expect(numbers.length).toBeGreaterThan(3);
    // Every pull request's object once, answered 200 (counted), and no other GET /pulls/{n}.
    expect(singlePullsAnswered(h, 200)).toEqual(numbers);
    expect(h.fake.requests.flatMap((entry) => singlePullNumber(entry) ?? [])).toHaveLength(numbers.length);
    const status = await h.app.importer.status(name);
    expect(status.failures).toEqual([{ type: 'user', id: 'ghost', error: expect.stringMatching(/404/) }]);
    expect(status.requests.counted).toBeLessThanOrEqual(h.fake.budget({ perPage: 100 }));
  });

  it('stores every pull request as the fake\'s single object answers it', async () => {
    const stored = await storedPulls(h);
    expect([...stored.keys()].sort((a, b) => a - b)).toEqual(numbers);
    const singles = new Map<number, any>();
    for (const number of numbers) singles.set(number, await fakeSingle(h, number));
    h.fake.clearLog();
    for (const number of numbers) {
      const row = stored.get(number);
      const single = singles.get(number);
      for (const field of SINGLE_ONLY) expect([number, field, row[field]]).toEqual([number, field, single[field]]);
      expect(row).toEqual(single);
    }
    // Both kinds of pull request are covered: merged ones with merged_by, open ones with mergeable.
    expect([...stored.values()].some((pull) => pull.merged === true && pull.merged_by?.login)).toBe(true);
    expect([...stored.values()].some((pull) => pull.state === 'open' && pull.mergeable === true && pull.mergeable_state !== 'unknown')).toBe(true);
  });

  it('asks again on a sync only the pull request that changed', async () => {
    // A first sync settles what changed while the import ran (objects of the same version answer 304: free).
    await syncHere(h, name);
    expect(singlePullsAnswered(h, 200)).toEqual([]);

    const project = h.fake.project;
    const changed = project.pulls.find((pull) => pull.state === 'open')!;
    pullOf(changed).additions = 4321;
    pullOf(changed).commits = 7;
    project.editIssue(changed.number, { title: 'Retitled while syncing' });
    const status = await syncHere(h, name);
    expect(status.failures.filter((failure) => failure.type !== 'user')).toEqual([]);
    expect(singlePullsAnswered(h, 200)).toEqual([changed.number]);
    // Anything else asked (the pull request a sync lists again at its watermark) answered 304, which costs nothing.
    expect(h.fake.requests.filter((entry) => singlePullNumber(entry) !== undefined && singlePullNumber(entry) !== changed.number).every((entry) => entry.status === 304)).toBe(true);
    const row = (await storedPulls(h)).get(changed.number);
    expect(row).toMatchObject({ title: 'Retitled while syncing', additions: 4321, commits: 7 });
    expect(row).toEqual(await fakeSingle(h, changed.number));
  });

  it('asks once more when GitHub is still computing mergeable, and stores a second null as answered', async () => {
    const project = h.fake.project;
    const open = project.pulls.filter((pull) => pull.state === 'open');
    expect(open.length).toBeGreaterThanOrEqual(2);
    const [computed, still] = [open[0]!, open[1]!];
    project.editIssue(computed.number, { title: 'Mergeable computed on the second ask' });
    project.editIssue(still.number, { title: 'Mergeable still unknown' });
    const unknown = async (number: number) => ({ ...(await fakeSingle(h, number)), mergeable: null, rebaseable: null, mergeable_state: 'unknown' });
    const computing = await unknown(computed.number);
    const stillComputing = await unknown(still.number);
    h.fake.inject({ match: new RegExp(`/pulls/${computed.number}$`), times: 1, fault: { status: 200, body: computing } });
    h.fake.inject({ match: new RegExp(`/pulls/${still.number}$`), times: 2, fault: { status: 200, body: stillComputing } });
    await syncHere(h, name);
    const asked = h.fake.requests.flatMap((entry) => singlePullNumber(entry) ?? []);
    expect(asked.filter((number) => number === computed.number)).toHaveLength(2);
    expect(asked.filter((number) => number === still.number)).toHaveLength(2);
    const stored = await storedPulls(h);
    expect(stored.get(computed.number)).toMatchObject({ mergeable: true, mergeable_state: 'clean', title: 'Mergeable computed on the second ask' });
    expect(stored.get(still.number)).toMatchObject({ mergeable: null, mergeable_state: 'unknown', title: 'Mergeable still unknown' });
  });

  it('asks on a sync for a pull request stored without its single object (an import made before it was asked for)', async () => {
    const db = h.app.kernel.database.db;
    const number = numbers[0]!;
    const row = (await storedPulls(h)).get(number);
    const listItem = Object.fromEntries(Object.entries(row).filter(([field]) => !SINGLE_ONLY.includes(field)));
    await db.updateTable('import_objects').set({ data: JSON.stringify(listItem) }).where('type', '=', 'pull_request').where('number', '=', number).execute();
    await syncHere(h, name);
    expect(singlePullsAnswered(h, 200)).toEqual([number]);
    expect((await storedPulls(h)).get(number)).toEqual(await fakeSingle(h, number));
    // Once: the next sync has nothing to ask.
    await syncHere(h, name);
    expect(h.fake.requests.flatMap((entry) => singlePullNumber(entry) ?? [])).toEqual([]);
  });
});

describe('a full import stopped among the pull requests\' jobs', () => {
  let h: ImportHarness;
  afterAll(async () => h?.close());

  it('resumes asking only the pull requests whose job had not stored its answer', async () => {
    h = await startImportHarness();
    const numbers = h.fake.project.pulls.map((pull) => pull.number).sort((a, b) => a - b);
    const record = await h.app.importer.create({ project: h.project, apiUrl: h.fake.apiUrl, credentials: credentialNames(1), concurrency: 1 });
    // Stopped (as a shutdown stops it) when the third pull request's object is asked for.
    let seen = 0;
    const stop = new AbortController();
    h.fake.onRequest = (entry) => {
      if (singlePullNumber(entry) === undefined || ++seen < 3) return;
      h.fake.onRequest = undefined;
      stop.abort(new Error('shutting down'));
    };
    const first = await h.app.importer.runHere(record.name, stop.signal);
    h.fake.onRequest = undefined;
    expect(first.outcome).toBe('stopped');
    expect((await h.app.importer.get(record.name)).stage).toBe('reviews');
    const db = h.app.kernel.database.db;
    const jobs = await db.selectFrom('import_jobs').select(['key', 'state']).where('key', 'like', 'pull:%').execute();
    const done = jobs.filter((job) => job.state === 'done').map((job) => Number(job.key.slice('pull:'.length)));
    expect(done.length).toBeGreaterThan(0);
    expect(done.length).toBeLessThan(numbers.length);

    h.fake.clearLog();
    const second = await h.app.importer.runHere(record.name);
    expect(second.outcome).toBe('synced');
    const askedAgain = h.fake.requests.flatMap((entry) => singlePullNumber(entry) ?? []).sort((a, b) => a - b);
    // None whose job had stored its answer is asked again (a job still in flight when the run stopped may store its answer after it).
    expect(askedAgain.length).toBeGreaterThan(0);
    expect(askedAgain.filter((number) => done.includes(number))).toEqual([]);
    expect(new Set(askedAgain).size).toBe(askedAgain.length);
    const after = await db.selectFrom('import_jobs').select(['key', 'state']).where('key', 'like', 'pull:%').execute();
    expect(after.map((job) => [job.key, job.state]).sort()).toEqual(numbers.map((number) => [`pull:${number}`, 'done']).sort());
    const stored = await storedPulls(h);
    for (const number of numbers) expect([number, stored.get(number)]).toEqual([number, await fakeSingle(h, number)]);
  });
});
