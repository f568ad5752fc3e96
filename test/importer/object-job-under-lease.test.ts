import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { BoundToken } from '../../src/credentials/store.js';
import { GithubClient } from '../../src/importer/github/client.js';
import { TokenBudgets } from '../../src/importer/github/pacer.js';
import { ObjectJobs } from '../../src/importer/run/object-jobs.js';
import { ImportRepository, type ImportRecord } from '../../src/importer/store/imports.js';
import { StageWaiter } from '../../src/importer/store/jobs.js';
import type { LeaseManager } from '../../src/leases/manager.js';
import { openLeaseManager } from '../../src/leases/open.js';
import { createLogger } from '../../src/logging/logger.js';
import { openDatabase, type Database } from '../../src/store/database.js';
import { startFakeGitHub, type FakeGitHub } from '../fake-github/index.js';
import { loopbackEgress } from '../support/egress.js';
import { testSecret } from '../support/secrets.js';

/*
 * A per-object job reads its `import_jobs` row under its lease. The
 * coordinator hands its jobs the run it listed them pending in (`running`),
 * and a job may then wait long for its lease or for a place among the
 * answers being stored (its process stopped, a busy database): meanwhile
 * another worker may have done it and let its lease go. Such a job must
 * return without asking GitHub again; until the row was read under the
 * lease, one given `running` read no row at all and fetched the pull
 * request and its reviews a second time (its write was refused, the rate
 * budget spent all the same).
 */

const STAGE = 'reviews';
/** Pull requests of the fake's small project (see smallProject). */
const DONE_ELSEWHERE = 3;
const STILL_PENDING = 5;

let dir: string;
let fake: FakeGitHub;
let database: Database;
let imports: ImportRepository;
let waiter: StageWaiter;
/** Two lease managers on one lease store: this process, and another worker. */
const leaseManagers: LeaseManager[] = [];
const objectJobs: ObjectJobs[] = [];
const budgets = new TokenBudgets();
const token = testSecret('OBJECT_JOB_UNDER_LEASE_TOKEN');
const policy = loopbackEgress();
const boundToken: BoundToken = { token, allows: (url) => url.host === new URL(fake.apiUrl).host };

/** ObjectJobs as the importer module builds it, its jobs run by the caller (no transport). */
function objectJobsOn(leases: LeaseManager): ObjectJobs {
  const jobs = new ObjectJobs({
    database,
    imports,
    waiter,
    leases,
    logger: createLogger({ level: 'silent' }),
    leaseTtlMs: 5_000,
    retry: { retries: 2, baseMs: 20 },
    openClient: async (record: ImportRecord, concurrency: number, signal: AbortSignal) =>
      new GithubClient({ apiUrl: record.apiUrl, tokens: [{ credential: 'GH', token: boundToken }], budgets, concurrency, policy, retries: 2, retryBaseMs: 20, signal }),
    tokens: async () => [boundToken],
    policy,
    filesDir: join(dir, 'import-files'),
    maxFileBytes: 1024 * 1024,
    enqueue: async () => undefined,
    runsJobs: () => true,
  });
  objectJobs.push(jobs);
  return jobs;
}

/** The fake's requests since `from` for pull request `number` (its single object and its reviews). */
function requestsFor(number: number, from: number) {
  const pattern = new RegExp(`/pulls/${number}(/|$)`);
  return fake.requests.slice(from).filter((entry) => pattern.test(entry.path));
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'forgesync-object-job-'));
  fake = await startFakeGitHub({ tokens: [token] });
  database = await openDatabase(`sqlite:${join(dir, 'forgesync.db')}`);
  imports = new ImportRepository(database);
  waiter = new StageWaiter(database.db);
  for (let i = 0; i < 2; i++) leaseManagers.push(await openLeaseManager(`sqlite:${join(dir, 'leases.db')}`));
});

afterAll(async () => {
  for (const jobs of objectJobs) jobs.close();
  for (const leases of leaseManagers) await leases.close();
  await database?.close();
  await fake?.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('a per-object job reads its row under its lease', () => {
  it("does not fetch again a job the coordinator listed pending that another worker did meanwhile, and does one still pending", async () => {
    const { owner, name } = fake.project.repo;
    const created = await imports.create({ name: 'widgets', owner, repo: name, apiUrl: fake.apiUrl, credentials: ['GH'], concurrency: 2, intervalMs: null });
    const running = (await imports.claim(created.id, 1n))!;
    expect(running.state).toBe('started');
    const keys = [`pull:${DONE_ELSEWHERE}`, `pull:${STILL_PENDING}`];
    await waiter.add(running.id, STAGE, running.run, keys);
    // The coordinator lists the stage's jobs pending, with the run it holds…
    expect(await waiter.pending(running.id, STAGE, running.run)).toEqual(keys);
    const shutdown = new AbortController().signal;
    const here = objectJobsOn(leaseManagers[0]!);
    const elsewhere = objectJobsOn(leaseManagers[1]!);

    // …and before it runs the first, another worker takes it from the transport, does it and lets its lease go.
    let from = fake.requests.length;
    await elsewhere.runJob(`${running.id}:pull:${DONE_ELSEWHERE}`, shutdown);
    expect(requestsFor(DONE_ELSEWHERE, from).length, 'the other worker fetched the pull request and its reviews').toBeGreaterThanOrEqual(2);
    expect((await waiter.find(running.id, `pull:${DONE_ELSEWHERE}`))?.state).toBe('done');
    expect(await leaseManagers[0]!.inspect(`import:github:${running.name}:pull:${DONE_ELSEWHERE}`)).toBeFalsy();

    // The coordinator's job now finds the lease free: it reads the row under it and asks GitHub nothing.
    from = fake.requests.length;
    await here.run(running.id, `pull:${DONE_ELSEWHERE}`, shutdown, running);
    expect(requestsFor(DONE_ELSEWHERE, from).map((entry) => entry.path)).toEqual([]);
    // A worker that got it from the transport (no run given) does not either.
    await here.runJob(`${running.id}:pull:${DONE_ELSEWHERE}`, shutdown);
    expect(requestsFor(DONE_ELSEWHERE, from).map((entry) => entry.path)).toEqual([]);

    // The job still pending is done by the same call: its requests are made, counted, and its row marked done.
    from = fake.requests.length;
    await here.run(running.id, `pull:${STILL_PENDING}`, shutdown, running);
    const fetched = requestsFor(STILL_PENDING, from);
    expect(fetched.map((entry) => entry.path)).toEqual(expect.arrayContaining([expect.stringMatching(new RegExp(`/pulls/${STILL_PENDING}$`)), expect.stringMatching(/\/reviews$/)]));
    expect(fetched.every((entry) => entry.counted && entry.status === 200)).toBe(true);
    const row = await waiter.find(running.id, `pull:${STILL_PENDING}`);
    expect(row).toMatchObject({ state: 'done', run: running.run, attempts: 1 });
    expect(await waiter.progress(running.id, STAGE, running.run)).toEqual({ pending: 0, done: 2, failed: 0 });
  });
});
