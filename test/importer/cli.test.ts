import { spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateProject, startFakeGitHub, type FakeGitHub, type LogEntry } from '../fake-github/index.js';
import { LOOPBACK_NETWORKS } from '../support/egress.js';
import { testSecret } from '../support/secrets.js';
import { credentialEnv } from './harness.js';

/*
 * The CLI contract against the fake GitHub, in child processes: `import
 * github --wait`, SIGKILL at chosen points of several stages and `import
 * resume --wait` (re-fetching at most the page in flight), status JSON,
 * list, a second import racing the first, export, and no token anywhere
 * it must not be: argv, logs, the database, files, git config.
 */

const CLI = fileURLToPath(new URL('../../bin/forgesync.js', import.meta.url));
const TOKEN = testSecret('GITHUB_CLI_TOKEN');

interface Run {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

/** Everything the CLI printed and every argument it got, for the secrets check. */
const seen: string[] = [];

/** Runs the CLI; `killWhen` may SIGKILL it from the fake's request hook. */
function forgesync(env: NodeJS.ProcessEnv, args: string[], fake?: FakeGitHub, killWhen?: (entry: LogEntry) => boolean): Promise<Run> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [CLI, ...args], { env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk) => (stdout += chunk));
    child.stderr.on('data', (chunk) => (stderr += chunk));
    if (fake && killWhen) {
      fake.onRequest = (entry) => {
        if (killWhen(entry)) {
          child.kill('SIGKILL');
          fake.onRequest = undefined;
        }
      };
    }
    child.on('close', (code, signal) => {
      seen.push(args.join(' '), stdout, stderr);
      resolve({ code, signal, stdout, stderr });
    });
  });
}

/** Requests answered 200 more than once for the same path and query (what a resume fetched again). */
function refetched(entries: readonly LogEntry[]): Map<string, number> {
  const seen = new Map<string, number>();
  for (const entry of entries) {
    // /rate_limit is asked at each start and costs nothing.
    if (entry.host !== 'api' || entry.status !== 200 || entry.path.endsWith('/rate_limit')) continue;
    const key = `${entry.path}?${entry.query}`;
    seen.set(key, (seen.get(key) ?? 0) + 1);
  }
  return new Map([...seen].filter(([, n]) => n > 1));
}

/** Every file under `dir`, recursively. */
function filesUnder(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    return entry.isDirectory() ? filesUnder(path) : entry.isFile() ? [path] : [];
  });
}

describe('forgesync import (CLI)', () => {
  let fake: FakeGitHub;
  let env: NodeJS.ProcessEnv;
  let dataDir: string;
  const project = () => `${fake.project.repo.owner}/${fake.project.repo.name}`;

  beforeAll(async () => {
    fake = await startFakeGitHub({
      tokens: [TOKEN],
      project: generateProject({ issues: 180, pulls: 30, commentsPerIssue: 4, reviewCommentsPerPull: 3, reviewsPerPull: 2, users: 25, seed: 3, attachmentEvery: 20 }),
    });
    dataDir = mkdtempSync(join(tmpdir(), 'forgesync-import-cli-'));
    env = {
      ...process.env,
      FORGESYNC_DATA_DIR: dataDir,
      FORGESYNC_GIT_PROTOCOLS: 'https,ssh,http',
      FORGESYNC_ALLOW_NETWORKS: LOOPBACK_NETWORKS,
      FORGESYNC_LEASE_TTL: '2s',
      FORGESYNC_IMPORT_RETRY_BASE: '20ms',
      FORGESYNC_LOG_LEVEL: 'info',
      ...credentialEnv(fake, [TOKEN]),
    };
  });
  afterAll(async () => fake?.close());

  it('refuses bad input with a clear message and stores nothing', async () => {
    const bad = await forgesync(env, ['import', 'github', 'not-a-project', '--api-url', fake.apiUrl]);
    expect(bad.code).not.toBe(0);
    expect(bad.stderr).toMatch(/is not <owner>\/<repo>/);
    const plain = await forgesync({ ...env, FORGESYNC_GIT_PROTOCOLS: 'https,ssh' }, ['import', 'github', project(), '--api-url', fake.apiUrl]);
    expect(plain.stderr).toMatch(/--api-url must be https/);
    const concurrency = await forgesync(env, ['import', 'github', project(), '--concurrency', 'lots', '--api-url', fake.apiUrl]);
    expect(concurrency.stderr).toMatch(/--concurrency must be a whole number from 1 to 100, not "lots"/);
    const timeout = await forgesync(env, ['import', 'github', project(), '--wait', '--timeout', 'soon', '--api-url', fake.apiUrl]);
    expect(timeout.stderr).toMatch(/--timeout must be a number of seconds \(600\) or a duration \(90s, 10m\), not "soon"/);
    const unbound = await forgesync(env, ['import', 'github', project(), '--credential', 'NOPE', '--api-url', fake.apiUrl]);
    expect(unbound.stderr).toMatch(/credential "NOPE" is not available/);
    const list = await forgesync(env, ['import', 'list', '--json']);
    expect(JSON.parse(list.stdout)).toEqual([]);
  });

  it('survives SIGKILL in several stages: resume re-fetches at most the page in flight, and the result is complete', async () => {
    const args = ['import', 'github', project(), '--api-url', fake.apiUrl, '--credential', 'GH', '--concurrency', '1', '--wait', '--json'];
    // Kill points: in the issues list (3rd page), the notes list (4th page), the reviews fan-out, the profiles.
    const kills: ((entry: LogEntry) => boolean)[] = [];
    const counter = (match: (entry: LogEntry) => boolean, nth: number) => {
      let n = 0;
      return (entry: LogEntry) => match(entry) && ++n === nth;
    };
    kills.push(counter((entry) => entry.path.endsWith('/issues') && entry.query.includes('page=3'), 1));
    kills.push(counter((entry) => entry.path.endsWith('/issues/comments'), 4));
    kills.push(counter((entry) => entry.path.endsWith('/reviews'), 7));
    kills.push(counter((entry) => entry.path.includes('/users/'), 5));
    fake.clearLog();
    let run = await forgesync(env, args, fake, kills[0]);
    expect(run.signal).toBe('SIGKILL');
    for (const kill of kills.slice(1)) {
      await new Promise((resolve) => setTimeout(resolve, 2200)); // the dead holder's lease lapses (ttl 2 s)
      run = await forgesync(env, ['import', 'resume', fake.project.repo.name, '--wait', '--json'], fake, kill);
      expect(run.signal).toBe('SIGKILL');
    }
    await new Promise((resolve) => setTimeout(resolve, 2200));
    run = await forgesync(env, ['import', 'resume', fake.project.repo.name, '--wait', '--json']);
    expect(run.stderr).not.toContain('Error');
    expect(run.code).toBe(0);
    const status = JSON.parse(run.stdout);
    expect(status.state).toBe('synced');
    const expected = fake.expected() as unknown as Record<string, number>;
    for (const type of ['issue', 'pull_request', 'note', 'diff_note', 'pull_request_review', 'issue_event', 'label', 'release', 'attachment', 'user']) {
      expect([type, status.counts.imported[type]]).toEqual([type, expected[type]]);
    }
    // With one request in flight, each kill cost at most that one page again; the kill in the reviews fan-out also the
    // pull request's object its job had asked (a job stores its object and its reviews in one write).
    const again = refetched(fake.requests);
    const objects = [...again.keys()].filter((key) => /\/pulls\/\d+\?/.test(key));
    const total = [...again.values()].reduce((sum, n) => sum + n - 1, 0);
    expect(objects.length).toBeLessThanOrEqual(1);
    expect(total - objects.length).toBeLessThanOrEqual(kills.length);
    expect(again.size - objects.length).toBeLessThanOrEqual(kills.length);
    // The final line, in the seed's shape, on stderr (logs).
    const final = run.stderr.split('\n').filter((line) => line.includes('GitHub project import finished')).map((line) => JSON.parse(line));
    expect(final).toHaveLength(1);
    expect(final[0]).toMatchObject({ message: 'GitHub project import finished', import: fake.project.repo.name, objects_imported: { fetched: expect.any(Object), imported: expect.any(Object) } });
  }, 180_000);

  it('prints the status and the list as JSON in the contract\'s shape', async () => {
    const status = JSON.parse((await forgesync(env, ['import', 'status', fake.project.repo.name, '--json'])).stdout);
    expect(Object.keys(status)).toEqual(expect.arrayContaining(['name', 'owner', 'repo', 'apiUrl', 'state', 'stage', 'counts', 'requests', 'startedAt', 'finishedAt', 'durationS', 'failures', 'sources']));
    expect(Object.keys(status.requests).sort()).toEqual(['counted', 'notModified', 'rateLimitWaits', 'retried', 'secondaryLimited', 'total']);
    expect(status.sources.repository).toMatchObject({ name: fake.project.repo.name, state: 'synced' });
    const list = JSON.parse((await forgesync(env, ['import', 'list', '--json'])).stdout);
    expect(list.map((entry: { name: string }) => entry.name)).toEqual([fake.project.repo.name]);
  });

  it('lets only one of two racing imports run; the other logs one skip line naming the holder and, with --wait, waits for it', async () => {
    await forgesync(env, ['import', 'sync', fake.project.repo.name]);
    // Slow answers keep the first holder busy for seconds; the second starts once the first is asking GitHub (it holds the lease).
    fake.latencyMs = 250;
    try {
      let startSecond: () => void = () => undefined;
      const secondStarted = new Promise<void>((resolve) => {
        startSecond = resolve;
        setTimeout(resolve, 10_000); // never hang: the assertions then say what went wrong
      });
      fake.onRequest = (entry) => {
        if (entry.host !== 'api') return;
        fake.onRequest = undefined;
        startSecond();
      };
      const [first, second] = await Promise.all([
        forgesync(env, ['import', 'resume', fake.project.repo.name, '--wait']),
        secondStarted.then(() => forgesync(env, ['import', 'resume', fake.project.repo.name, '--wait'])),
      ]);
      const skipped = [first, second].filter((run) => run.stderr.includes('operation skipped - process locked by'));
      expect(skipped).toEqual([second]);
      const lines = second.stderr.split('\n').filter((text) => text.includes('operation skipped'));
      expect(lines).toHaveLength(1);
      expect(JSON.parse(lines[0]!).holder).toMatch(/^import [\w.-]+\(\d+\)$/);
      // --wait waited for the holder to finish, then found the import synced.
      expect(second.stderr).toMatch(/another process \("import [\w.-]+\(\d+\)"\) is running import [\w.-]+; waiting until it ends or its lease lapses/);
      expect(second.stdout).toMatch(/\tsynced\t/);
      expect(second.code).toBe(0);
      expect(first.code).toBe(0);
    } finally {
      fake.latencyMs = 0;
    }
  }, 60_000);

  it('import resume --wait right after a SIGKILL waits for the dead holder\'s lease to lapse, then runs to synced', async () => {
    // Killed while it holds the lease (the 2nd page of issues); the resume starts at once, before the lease (ttl 2 s) lapses.
    let pages = 0;
    const killed = await forgesync(env, ['import', 'github', project(), '--name', 'killed', '--api-url', fake.apiUrl, '--credential', 'GH', '--concurrency', '1', '--wait'], fake, (entry) => entry.path.endsWith('/issues') && ++pages === 2);
    expect(killed.signal).toBe('SIGKILL');
    const resumed = await forgesync(env, ['import', 'resume', 'killed', '--wait', '--json']);
    expect(resumed.stderr).toMatch(/another process \("import killed\(\d+\)"\) is running import killed; waiting until it ends or its lease lapses \(at most 600 s\)/);
    expect(resumed.stderr).not.toContain('another process is running import');
    expect(resumed.code).toBe(0);
    const status = JSON.parse(resumed.stdout);
    expect(status.state).toBe('synced');
    const expected = fake.expected() as unknown as Record<string, number>;
    for (const type of ['issue', 'pull_request', 'note', 'release', 'release_asset', 'attachment', 'user']) {
      expect([type, status.counts.imported[type]]).toEqual([type, expected[type]]);
    }
  }, 120_000);

  it('--wait --timeout gives up on a live holder: exit status 1, naming the holder and how long it waited', async () => {
    // Slow answers keep the holder's sync busy for many seconds.
    fake.latencyMs = 1000;
    try {
      let startSecond: () => void = () => undefined;
      const secondStarted = new Promise<void>((resolve) => {
        startSecond = resolve;
        setTimeout(resolve, 10_000);
      });
      fake.onRequest = (entry) => {
        if (entry.host !== 'api') return;
        fake.onRequest = undefined;
        startSecond();
      };
      const holder = forgesync(env, ['import', 'sync', 'killed', '--wait']);
      await secondStarted;
      const waiter = await forgesync(env, ['import', 'sync', 'killed', '--wait', '--timeout', '1s']);
      expect(waiter.code).toBe(1);
      expect(waiter.stderr).toMatch(/forgesync: another process \("import killed\(\d+\)"\) is still running import killed after waiting 1(\.\d)? s; see forgesync import status killed/);
      fake.latencyMs = 0;
      expect((await holder).code).toBe(0);
    } finally {
      fake.latencyMs = 0;
    }
  }, 60_000);

  it('exports the migration archive', async () => {
    const to = join(dataDir, 'archive');
    const run = await forgesync(env, ['import', 'export', fake.project.repo.name, '--to', to]);
    expect(run.stderr).toBe('');
    expect(JSON.parse(readFileSync(join(to, 'schema.json'), 'utf8')).version).toMatch(/^1\./);
    const issues = JSON.parse(readFileSync(join(to, 'issues_000001.json'), 'utf8'));
    expect(issues.length).toBeGreaterThan(0);
    expect(statSync(join(to, 'repositories', fake.project.repo.owner, `${fake.project.repo.name}.git`, 'HEAD')).isFile()).toBe(true);
  });

  it('never writes the token to argv, logs, the database, files or git config', async () => {
    expect(seen.length).toBeGreaterThan(20);
    expect(seen.filter((text) => text.includes(TOKEN))).toEqual([]);
    for (const file of filesUnder(dataDir)) {
      expect([file, readFileSync(file).includes(TOKEN)]).toEqual([file, false]);
    }
    // The fake saw it as a header, only on its API and web hosts.
    expect(fake.requests.some((entry) => entry.host === 'foreign')).toBe(false);
  });
});
