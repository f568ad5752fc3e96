import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { signBody } from '../../src/replication/webhooks/index.js';
import { generateProject, startFakeGitHub, type FakeGitHub } from '../fake-github/index.js';
import { ForgesyncProcess, requireBuilt } from '../support/cluster/processes.js';
import { createTestDatabase, eventually, testJobsUrl } from '../support/harness.js';
import { testSecret } from '../support/secrets.js';

/*
 * A delivery answered 202 is never lost: a real `forgesync serve` is
 * SIGKILLed in the middle of a burst of deliveries, each naming an issue
 * whose title changed upstream; once it is started again, every issue whose
 * delivery was answered 202 has its new title in the copy. On SQLite with
 * the in-process jobs and on PostgreSQL with BullMQ. Runs the built CLI.
 */

const ADMIN = testSecret('REFRESH_CRASH_ADMIN');
const HOOK_SECRET = testSecret('REFRESH_CRASH_HOOK');
const TOKEN = testSecret('REFRESH_CRASH_GITHUB');
const BURST = 80;
const KILL_AFTER = 30;

describe.each([
  { database: 'sqlite' as const, jobs: undefined },
  { database: 'postgres' as const, jobs: testJobsUrl(11) },
])('a SIGKILL during a burst of deliveries on $database, jobs $jobs', ({ database, jobs }) => {
  let fake: FakeGitHub;
  let serve: ForgesyncProcess;
  let origin: string;

  beforeAll(async () => {
    requireBuilt();
    fake = await startFakeGitHub({ tokens: [TOKEN], git: false, project: generateProject({ issues: BURST + 10, pulls: 2, commentsPerIssue: 1, users: 5, seed: 41 }) });
    const dataDir = mkdtempSync(join(tmpdir(), 'forgesync-refresh-crash-'));
    const secrets = join(dataDir, 'secrets.json');
    writeFileSync(secrets, JSON.stringify({ GH: { token: TOKEN, hosts: [new URL(fake.apiUrl).host] } }), { mode: 0o600 });
    const { url } = await createTestDatabase(database);
    serve = new ForgesyncProcess('serve', ['--port', '0'], {
      FORGESYNC_DATA_DIR: dataDir,
      FORGESYNC_DATABASE_URL: url,
      FORGESYNC_SECRETS_FILE: secrets,
      FORGESYNC_ADMIN_TOKEN: ADMIN,
      FORGESYNC_GITHUB_WEBHOOK_SECRET: HOOK_SECRET,
      FORGESYNC_HOST: '127.0.0.1',
      FORGESYNC_ALLOW_NETWORKS: '127.0.0.1/32',
      FORGESYNC_GIT_PROTOCOLS: 'https,ssh,http',
      FORGESYNC_LEASE_TTL: '3s',
      FORGESYNC_SCHEDULER_TICK: '200ms',
      FORGESYNC_IMPORT_RETRY_BASE: '20ms',
      FORGESYNC_LOG_LEVEL: 'info',
      ...(jobs ? { FORGESYNC_JOBS_URL: jobs } : {}),
    }, join(dataDir, 'serve.log'));
    origin = String(await serve.start()).replace('0.0.0.0', '127.0.0.1');
    const created = await fetch(`${origin}/api/imports`, {
      method: 'POST',
      headers: { authorization: `Bearer ${ADMIN}`, 'content-type': 'application/json' },
      body: JSON.stringify({ project: `${fake.project.repo.owner}/${fake.project.repo.name}`, apiUrl: fake.apiUrl, credentials: ['GH'] }),
    });
    expect(created.status).toBe(202);
    await eventually('the import to finish', async () => ((await importState()) === 'synced' ? true : undefined), 90_000);
  }, 150_000);
  afterAll(async () => {
    await serve?.stop();
    await fake?.close();
  });

  async function importState(): Promise<string | undefined> {
    const response = await fetch(`${origin}/api/imports/${fake.project.repo.name}`, { headers: { authorization: `Bearer ${ADMIN}` } });
    return ((await response.json()) as { state?: string }).state;
  }

  async function deliver(number: number): Promise<number> {
    const body = JSON.stringify({ action: 'edited', issue: { number }, repository: { id: fake.project.repo.id, full_name: `${fake.project.repo.owner}/${fake.project.repo.name}` } });
    const response = await fetch(`${origin}/hooks/github`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-github-event': 'issues', 'x-github-delivery': `burst-${number}`, 'x-hub-signature-256': signBody(HOOK_SECRET, body) },
      body,
    });
    await response.arrayBuffer();
    return response.status;
  }

  it('applies every delivery it answered 202 once it is back', async () => {
    const issues = fake.project.issues.slice(0, BURST);
    for (const issue of issues) fake.project.editIssue(issue.number, { title: `${issue.title} (edited upstream)` });
    const accepted: number[] = [];
    let crashing: Promise<void> | undefined;
    let next = 0;
    const sender = async () => {
      while (next < issues.length) {
        const { number } = issues[next++]!;
        const status = await deliver(number).catch(() => 0);
        if (status === 202) accepted.push(number);
        if (accepted.length >= KILL_AFTER && !crashing) crashing = serve.crash();
      }
    };
    await Promise.all(Array.from({ length: 8 }, sender));
    await crashing;
    expect(accepted.length).toBeGreaterThanOrEqual(KILL_AFTER);
    expect(accepted.length).toBeLessThan(BURST);
    origin = String(await serve.start()).replace('0.0.0.0', '127.0.0.1');
    const titles = new Map(issues.map((issue) => [issue.number, issue.title]));
    await eventually('every accepted delivery applied', async () => {
      for (const number of accepted) {
        const response = await fetch(`${origin}/github/repos/${fake.project.repo.owner}/${fake.project.repo.name}/issues/${number}`, { headers: { authorization: `Bearer ${ADMIN}` } });
        const issue = (await response.json()) as { title?: string };
        if (issue.title !== titles.get(number)) return undefined;
      }
      return true;
    }, 30_000);
  }, 90_000);
});
