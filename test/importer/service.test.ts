import { Octokit } from '@octokit/rest';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildServer, type ForgesyncServer } from '../../src/server/app.js';
import { generateProject } from '../fake-github/index.js';
import { eventually, testJobsUrl } from '../support/harness.js';
import { testSecret } from '../support/secrets.js';
import { credentialNames, expectedCounts, startImportHarness, type ImportHarness } from './harness.js';

/*
 * `forgesync serve` running imports: created through the API, run by the
 * job transport (in-process, and BullMQ on Redis where the per-object jobs
 * go through the queue), read back through the GitHub-compatible API with
 * Octokit, with the metrics the issue names. Plus stall detection.
 */

const ADMIN = testSecret('IMPORT_ADMIN_TOKEN');
const READ = testSecret('IMPORT_READ_TOKEN');

describe.each([
  { database: 'sqlite' as const, jobs: undefined },
  { database: 'postgres' as const, jobs: testJobsUrl(10) },
])('imports served on $database with jobs $jobs', ({ database, jobs }) => {
  let h: ImportHarness;
  let server: ForgesyncServer;
  let base: string;
  const auth = { authorization: `Bearer ${ADMIN}`, 'content-type': 'application/json' };

  beforeAll(async () => {
    h = await startImportHarness({ database, env: jobs ? { FORGESYNC_JOBS_URL: jobs } : {} });
    server = await buildServer(h.app, { tokens: { admin: ADMIN, read: READ } });
    await server.listen({ port: 0, host: '127.0.0.1' });
    base = `http://127.0.0.1:${(server.server.address() as { port: number }).port}`;
    await h.app.startService();
  });
  afterAll(async () => {
    await server?.close();
    await h?.close();
  });

  it('imports a project created through the API, run by the job transport', async () => {
    const created = await fetch(`${base}/api/imports`, { method: 'POST', headers: auth, body: JSON.stringify({ project: h.project, apiUrl: h.fake.apiUrl, credentials: credentialNames(1) }) });
    expect(created.status).toBe(202);
    const name = h.fake.project.repo.name;
    const status = await eventually('the import to finish', async () => {
      const answer = (await (await fetch(`${base}/api/imports/${name}`, { headers: auth })).json()) as { state: string };
      return answer.state === 'synced' || answer.state === 'failed' ? answer : undefined;
    }, 60_000);
    expect(status).toMatchObject({ state: 'synced', failure: null });
    expect((status as any).counts.imported).toMatchObject(expectedCounts(h.fake));
    const list = (await (await fetch(`${base}/api/imports`, { headers: auth })).json()) as { name: string }[];
    expect(list.map((entry) => entry.name)).toEqual([name]);
  }, 90_000);

  it('answers GitHub clients: Octokit reads the copy with a read token', async () => {
    const octokit = new Octokit({ baseUrl: `${base}/github`, auth: READ });
    const { owner, name: repo } = h.fake.project.repo;
    const { data: repository } = await octokit.rest.repos.get({ owner, repo });
    expect(repository.full_name).toBe(`${owner}/${repo}`);
    const issues = await octokit.paginate(octokit.rest.issues.listForRepo, { owner, repo, state: 'all', per_page: 5 });
    expect(issues.length).toBe(h.fake.project.issues.length);
    const open = await octokit.paginate(octokit.rest.issues.listForRepo, { owner, repo });
    expect(open.every((issue) => issue.state === 'open')).toBe(true);
    const comments = await octokit.paginate(octokit.rest.issues.listCommentsForRepo, { owner, repo, per_page: 100 });
    expect(comments.length).toBe(h.fake.project.comments.length);
    const merged = h.fake.project.pulls.find((pull) => pull.state === 'closed')!;
    const { data: pull } = await octokit.rest.pulls.get({ owner, repo, pull_number: merged.number });
    expect(pull.number).toBe(merged.number);
    const reviews = await octokit.rest.pulls.listReviews({ owner, repo, pull_number: merged.number });
    expect(reviews.status).toBe(200);
    const missing = await octokit.rest.issues.get({ owner, repo, issue_number: 99_999 }).catch((error: { status: number }) => error);
    expect((missing as { status: number }).status).toBe(404);
    // An attachment link points at forgesync now, and serves the same bytes.
    const withFile = issues.find((issue) => issue.body?.includes('/github/attachments/'));
    expect(withFile).toBeDefined();
    const link = /\((http[^)\s]+\/github\/attachments\/[^)\s]+)\)/.exec(withFile!.body!)![1]!;
    const file = await fetch(link, { headers: { authorization: `token ${READ}` } });
    expect(file.status).toBe(200);
    const original = /\((http[^)\s]+)\)/.exec(h.fake.project.issues.find((issue) => issue.number === withFile!.number)!.body!.replaceAll('{{web}}', h.fake.webUrl))![1]!;
    const upstream = await fetch(original);
    expect(Buffer.from(await file.arrayBuffer()).equals(Buffer.from(await upstream.arrayBuffer()))).toBe(true);
    expect(file.headers.get('content-type')).toBe(upstream.headers.get('content-type'));
  });

  it('exposes the import metrics', async () => {
    const text = await (await fetch(`${base}/metrics`)).text();
    expect(text).toMatch(/forgesync_import_objects_total\{type="issue",kind="imported"\} \d+/);
    expect(text).toMatch(/forgesync_import_requests_total\{result="ok"\} \d+/);
    expect(text).toContain('forgesync_import_rate_limit_wait_seconds_total');
    expect(text).toMatch(/forgesync_import_stage\{import="[^"]+",stage="finish",state="synced"\} 10/);
  });
});

describe('the sync schedule', () => {
  let h: ImportHarness;
  afterAll(async () => h?.close());

  it('requests a sync of a finished import when its interval is up, and of a sync failed for a permanent cause too; one failed for a transient cause is resumed sooner', async () => {
    h = await startImportHarness({ env: { FORGESYNC_IMPORT_SYNC_INTERVAL: '1s', FORGESYNC_IMPORT_RETRIES: '0' } });
    const record = await h.app.importer.create({ project: h.project, apiUrl: h.fake.apiUrl, credentials: credentialNames(1) });
    expect((await h.app.importer.runHere(record.name)).outcome).toBe('synced');
    await h.app.importer.tick();
    expect((await h.app.importer.get(record.name)).run).toBe(1); // not due yet
    await new Promise((resolve) => setTimeout(resolve, 1100));
    await h.app.importer.tick();
    const due = await h.app.importer.get(record.name);
    expect(due).toMatchObject({ state: 'pending', mode: 'sync', run: 2 });
    // GitHub answering 500 through every retry is transient: the scheduler resumes the run where it stopped, at its retry time.
    h.fake.inject({ match: (request) => request.pathKind !== 'rate_limit', times: Infinity, fault: '500' });
    const failed = await h.app.importer.runHere(record.name);
    expect(failed.outcome).toBe('failed');
    expect(failed.record.retryAt).not.toBeNull();
    h.fake.clearFaults();
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, failed.record.retryAt! - Date.now()) + 10));
    await h.app.importer.tick();
    expect(await h.app.importer.get(record.name)).toMatchObject({ state: 'pending', mode: 'sync', run: 2 });
    expect((await h.app.importer.runHere(record.name)).outcome).toBe('synced');
    // The repository answering 404 is permanent: no retry, the next sync when the interval is up.
    await new Promise((resolve) => setTimeout(resolve, 1100));
    await h.app.importer.tick();
    expect(await h.app.importer.get(record.name)).toMatchObject({ state: 'pending', mode: 'sync', run: 3 });
    h.fake.inject({ match: (request) => request.pathKind === 'repo', times: Infinity, fault: { status: 404, body: { message: 'Not Found' } } });
    const notFound = await h.app.importer.runHere(record.name);
    expect(notFound.outcome).toBe('failed');
    expect(notFound.record.retryAt).toBeNull();
    h.fake.clearFaults();
    await h.app.importer.tick();
    expect(await h.app.importer.get(record.name)).toMatchObject({ state: 'failed', run: 3 });
    await new Promise((resolve) => setTimeout(resolve, 1100));
    await h.app.importer.tick();
    expect(await h.app.importer.get(record.name)).toMatchObject({ state: 'pending', mode: 'sync', run: 4 });
    expect((await h.app.importer.runHere(record.name)).outcome).toBe('synced');
  }, 60_000);
});

describe('stall detection', () => {
  let h: ImportHarness;
  afterAll(async () => h?.close());

  it('fails a stage that makes no progress, saying where it stopped, and stays resumable', async () => {
    h = await startImportHarness({
      fake: { project: generateProject({ issues: 30, pulls: 4, commentsPerIssue: 2, users: 6, seed: 2 }) },
      env: { FORGESYNC_IMPORT_STALL_TIMEOUT: '1s' },
    });
    h.fake.inject({ match: '/issues/comments', times: 1, fault: { delayMs: 4000 } });
    const record = await h.app.importer.create({ project: h.project, apiUrl: h.fake.apiUrl, credentials: credentialNames(1) });
    const first = await h.app.importer.runHere(record.name);
    expect(first.outcome).toBe('failed');
    expect(first.record.state).toBe('failed');
    expect(first.record.failure).toMatch(/stage notes made no progress for \d+ s \(notes: 0 page\(s\) done\); run forgesync import resume/);
    await h.app.importer.resume(record.name);
    const second = await h.app.importer.runHere(record.name);
    expect(second.outcome).toBe('synced');
    expect((await h.app.importer.status(record.name)).counts.imported.note).toBe(h.fake.project.comments.length);
  }, 60_000);
});
