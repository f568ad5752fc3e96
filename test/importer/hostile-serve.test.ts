import Database from 'better-sqlite3';
import { spawn, type ChildProcess } from 'node:child_process';
import { closeSync, existsSync, mkdtempSync, openSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BAD_ESCAPE_PATH, generateProject, startFakeGitHub, withHostileLinks, type FakeGitHub } from '../fake-github/index.js';
import { BIN, requireBuilt } from '../support/cluster/processes.js';
import { testSecret } from '../support/secrets.js';

/*
 * A real `forgesync serve` with a small heap (node --max-old-space-size=256)
 * against API hosts that mean harm, one import each, all at once:
 *  - huge: a normal page 1, then 64 MiB pages (chunked, no length), 20 asked
 *    for at once;
 *  - links: profiles redirected to a loopback address the egress policy
 *    does not allow, attachments redirected to a private address, bodies
 *    linking files on foreign, metadata, private and loopback hosts, and an
 *    attachment named with a malformed escape;
 *  - drip: a list page trickled out a space at a time, forever;
 *  - claim: page 1 of every list claims a last page of 1,000,000,000.
 * The process stays up and `/livez` answers throughout; each import ends
 * failed with a reason naming the problem, or synced with what it could not
 * get listed. Runs the built CLI: build first (npx tsc -p tsconfig.build.json).
 */

const MiB = 2 ** 20;
const ADMIN = testSecret('HOSTILE_ADMIN_TOKEN');
const STALL = '10s';

interface Served {
  child: ChildProcess;
  logFile: string;
  dataDir: string;
  origin: string;
}

let fakes: Record<'huge' | 'links' | 'drip' | 'claim', FakeGitHub>;
let serve: Served;
const livez: { at: number; ok: boolean; ms: number }[] = [];
let polling = true;
let poller: Promise<void> | undefined;

function logLines(file: string): Record<string, unknown>[] {
  if (!existsSync(file)) return [];
  return readFileSync(file, 'utf8')
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .flatMap((line) => {
      try {
        return [JSON.parse(line) as Record<string, unknown>];
      } catch {
        return [];
      }
    });
}

const running = (child: ChildProcess) => child.exitCode === null && child.signalCode === null;

async function startServe(env: Record<string, string>, dataDir: string): Promise<Served> {
  const logFile = join(dataDir, 'serve.log');
  const fd = openSync(logFile, 'a');
  const child = spawn(process.execPath, ['--max-old-space-size=256', BIN, 'serve', '--port', '0'], { env: { PATH: process.env.PATH, HOME: process.env.HOME, ...env }, stdio: ['ignore', 'ignore', fd] });
  closeSync(fd);
  const deadline = Date.now() + 45_000;
  for (;;) {
    const line = logLines(logFile).find((entry) => entry.event === 'serve' && typeof entry.address === 'string');
    if (line) return { child, logFile, dataDir, origin: String(line.address).replace('0.0.0.0', '127.0.0.1') };
    if (!running(child)) throw new Error(`serve exited (${child.exitCode ?? child.signalCode}) before serving; see ${logFile}`);
    if (Date.now() > deadline) throw new Error(`serve did not start; see ${logFile}`);
    await sleep(50);
  }
}

async function api(path: string, init: { method?: string; body?: unknown } = {}): Promise<{ status: number; body: any }> {
  const response = await fetch(`${serve.origin}${path}`, {
    method: init.method ?? 'GET',
    headers: { authorization: `Bearer ${ADMIN}`, ...(init.body ? { 'content-type': 'application/json' } : {}) },
    ...(init.body ? { body: JSON.stringify(init.body) } : {}),
  });
  const text = await response.text();
  return { status: response.status, body: text ? JSON.parse(text) : null };
}

/** The import's status once it has ended (failed, synced or cancelled). */
async function ended(name: string, timeoutMs = 150_000): Promise<any> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (!running(serve.child)) throw new Error(`serve died (${serve.child.exitCode ?? serve.child.signalCode}) while import ${name} ran; see ${serve.logFile}`);
    const { body } = await api(`/api/imports/${name}`);
    if (body && ['failed', 'synced', 'cancelled'].includes(body.state)) return body;
    if (Date.now() > deadline) throw new Error(`import ${name} still ${body?.state} at stage ${body?.stage}; see ${serve.logFile}`);
    await sleep(250);
  }
}

beforeAll(async () => {
  requireBuilt();
  const tokens = { huge: testSecret('HOSTILE_HUGE'), links: testSecret('HOSTILE_LINKS'), drip: testSecret('HOSTILE_DRIP'), claim: testSecret('HOSTILE_CLAIM') };
  const [huge, links, drip, claim] = await Promise.all([
    // 2,100 issues: page 1 of /issues is ~0.4 MB as usual, pages 2 to 22 are 64 MiB each.
    startFakeGitHub({ tokens: [tokens.huge], git: false, project: generateProject({ issues: 2100, pulls: 3, commentsPerIssue: 0, users: 6, seed: 21 }), hostile: { largePageBytes: 64 * MiB, largePageChunked: true } }),
    startFakeGitHub({
      tokens: [tokens.links],
      project: withHostileLinks(generateProject({ issues: 30, pulls: 4, commentsPerIssue: 1, users: 5, seed: 22, attachmentEvery: 10 })),
      hostile: { redirect: { match: '/users/', to: 'http://127.0.0.2:9/users/x' }, fileRedirect: { match: '/user-attachments/assets/', to: 'http://10.0.0.7/user-attachments/assets/stolen.png' } },
    }),
    startFakeGitHub({ tokens: [tokens.drip], git: false, project: generateProject({ issues: 20, pulls: 2, commentsPerIssue: 2, users: 4, seed: 23 }), hostile: { drip: { match: '/issues/comments', everyMs: 100, endless: true } } }),
    startFakeGitHub({ tokens: [tokens.claim], project: generateProject({ issues: 150, pulls: 3, commentsPerIssue: 1, users: 4, seed: 24 }), claimLastPage: 1_000_000_000 }),
  ]);
  fakes = { huge: huge!, links: links!, drip: drip!, claim: claim! };
  const dataDir = mkdtempSync(join(tmpdir(), 'forgesync-hostile-'));
  const secrets = join(dataDir, 'secrets.json');
  const bound = (fake: FakeGitHub, token: string) => ({ token, hosts: [new URL(fake.apiUrl).host, new URL(fake.webUrl).host] });
  writeFileSync(
    secrets,
    JSON.stringify({ GH_HUGE: bound(huge!, tokens.huge), GH_LINKS: bound(links!, tokens.links), GH_DRIP: bound(drip!, tokens.drip), GH_CLAIM: bound(claim!, tokens.claim) }),
    { mode: 0o600 },
  );
  serve = await startServe(
    {
      FORGESYNC_DATA_DIR: dataDir,
      FORGESYNC_SECRETS_FILE: secrets,
      FORGESYNC_ADMIN_TOKEN: ADMIN,
      FORGESYNC_HOST: '127.0.0.1',
      FORGESYNC_GIT_PROTOCOLS: 'https,ssh,http',
      // The fakes listen on 127.0.0.1 only: 127.0.0.2 (loopback) and private ranges stay refused.
      FORGESYNC_ALLOW_NETWORKS: '127.0.0.1/32',
      FORGESYNC_IMPORT_STALL_TIMEOUT: STALL,
      FORGESYNC_IMPORT_RETRY_BASE: '20ms',
      FORGESYNC_IMPORT_RETRIES: '2',
      FORGESYNC_LEASE_TTL: '3s',
      FORGESYNC_LOG_LEVEL: 'info',
    },
    dataDir,
  );
  poller = (async () => {
    while (polling) {
      const started = Date.now();
      const ok = await fetch(`${serve.origin}/livez`, { signal: AbortSignal.timeout(5000) }).then((response) => response.status === 200, () => false);
      livez.push({ at: started, ok, ms: Date.now() - started });
      await sleep(200);
    }
  })();
  const create = (name: keyof typeof fakes, credential: string) =>
    api('/api/imports', { method: 'POST', body: { project: `${fakes[name].project.repo.owner}/${fakes[name].project.repo.name}`, name, apiUrl: fakes[name].apiUrl, credentials: [credential] } });
  for (const [name, credential] of [['huge', 'GH_HUGE'], ['links', 'GH_LINKS'], ['drip', 'GH_DRIP'], ['claim', 'GH_CLAIM']] as const) {
    const created = await create(name, credential);
    if (created.status !== 202) throw new Error(`POST /api/imports (${name}) answered ${created.status}: ${JSON.stringify(created.body)}`);
  }
}, 120_000);

afterAll(async () => {
  polling = false;
  await poller;
  if (serve && running(serve.child)) {
    serve.child.kill('SIGTERM');
    const timer = setTimeout(() => serve.child.kill('SIGKILL'), 15_000);
    await new Promise((resolve) => serve.child.once('exit', resolve));
    clearTimeout(timer);
  }
  await Promise.all(Object.values(fakes ?? {}).map((fake) => fake.close()));
}, 60_000);

describe('forgesync serve against hostile API hosts, with a 256 MB heap', () => {
  it('fails the import whose pages after the first are 64 MiB, naming the limit, within its memory', async () => {
    const status = await ended('huge');
    expect(status.state).toBe('failed');
    expect(status.failure).toMatch(/GET \/repos\/acme-org\/bigrepo\/issues failed: the answer is larger than 8388608 bytes \(8 MiB\)/);
    // Many pages were asked for at once, as page 1 (~0.4 MB) allowed: what bounded the memory was the bytes that came, not page 1's size.
    const large = fakes.huge.requests.filter((entry) => entry.path.endsWith('/issues') && !/(^|&)page=1(&|$)/.test(entry.query));
    expect(large.length).toBeGreaterThanOrEqual(10);
  }, 180_000);

  it('refuses redirects to addresses the egress policy does not allow and links on other hosts, and lists what it could not get', async () => {
    const status = await ended('links');
    expect(status.state).toBe('synced');
    const failures = status.failures as { type: string; id: string; error: string }[];
    const users = failures.filter((failure) => failure.type === 'user');
    expect(users.length).toBeGreaterThan(0);
    for (const failure of users) expect(failure.error).toMatch(/refusing to connect to 127\.0\.0\.2: it is in 127\.0\.0\.0\/8/);
    const redirected = failures.filter((failure) => failure.type === 'attachment' && failure.id.includes('/user-attachments/assets/'));
    expect(redirected.length).toBeGreaterThan(0);
    for (const failure of redirected) expect(failure.error).toMatch(/redirected off the project's hosts \(http:\/\/10\.0\.0\.7\//);
    // Nothing went to the foreign host; the metadata, private and loopback links were left as links.
    expect(fakes.links.requests.filter((entry) => entry.host === 'foreign')).toEqual([]);
    const db = new Database(join(serve.dataDir, 'forgesync.db'), { readonly: true, fileMustExist: true });
    try {
      const rows = db.prepare('SELECT url, state, filename, error FROM import_attachments').all() as { url: string; state: string; filename: string | null; error: string | null }[];
      const refused = rows.filter((row) => row.state === 'refused').map((row) => new URL(row.url).host);
      expect(refused).toEqual(expect.arrayContaining([new URL(fakes.links.foreignUrl).host, '169.254.169.254', '10.0.0.7', '127.0.0.2:9']));
      // The attachment named with a malformed escape is downloaded and stored under that name.
      expect(rows.find((row) => row.url.endsWith(BAD_ESCAPE_PATH))).toMatchObject({ state: 'done', filename: 'report%E0%A4%A.txt' });
    } finally {
      db.close();
    }
  }, 180_000);

  it('fails the import whose list page drips forever, as stalled', async () => {
    const status = await ended('drip');
    expect(status.state).toBe('failed');
    expect(status.failure).toMatch(/^stage notes made no progress for \d+ s \(notes: 0 page\(s\) done\)/);
  }, 180_000);

  it('walks the lists whose page 1 claims a billion pages page by page, and says so', async () => {
    const status = await ended('claim');
    expect(status.state).toBe('synced');
    expect(status.counts.imported.issue).toBe(fakes.claim.expected().issue);
    expect(logLines(serve.logFile).some((line) => line.event === 'import_walk_paged')).toBe(true);
  }, 180_000);

  it('stayed up, and /livez answered throughout', async () => {
    expect(running(serve.child)).toBe(true);
    expect((await fetch(`${serve.origin}/livez`)).status).toBe(200);
    expect(livez.length).toBeGreaterThan(10);
    expect(livez.filter((probe) => !probe.ok)).toEqual([]);
    const fatal = logLines(serve.logFile).filter((line) => Number(line.level) >= 60 || /uncaught|unhandled|heap/i.test(String(line.msg ?? '')));
    expect(fatal).toEqual([]);
    // The peak resident memory of the whole process (pages, parsing, SQLite): ~200 MB; 20 answers of 64 MiB read at once took 800.
    const peakKb = Number(/VmHWM:\s+(\d+)/.exec(readFileSync(`/proc/${serve.child.pid}/status`, 'utf8'))?.[1] ?? 0);
    expect(peakKb).toBeGreaterThan(0);
    expect(peakKb * 1024).toBeLessThan(400 * MiB);
  }, 30_000);
});
