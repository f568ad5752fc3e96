import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import type { LightMyRequestResponse } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Forgesync } from '../../src/app/forgesync.js';
import { buildServer, type ForgesyncServer } from '../../src/server/app.js';
import { formatBytes } from '../../src/snapshots/errors.js';
import { eventually, openTestForgesync } from '../support/harness.js';
import { snapshotHolds } from '../support/stores.js';
import { git } from '../support/git-fixtures.js';
import { testSecret } from '../support/secrets.js';
import { Upstream } from '../support/upstream.js';
import { startTestServer, type TestServer } from '../support/test-server.js';

const ADMIN = testSecret('ADMIN_TOKEN');
const READ = testSecret('READ_TOKEN');
/** The read token of a second server over the same data directory and registry. */
const OTHER_READ = testSecret('OTHER_READ_TOKEN');
const HOUR = 3600_000;

const CLI = fileURLToPath(new URL('../../bin/forgesync.js', import.meta.url));
const run = promisify(execFile);

/** Runs the CLI (the operator, on the machine) on `app`'s data directory and registry. */
async function forgesyncCli(app: Forgesync, ...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  const env = { ...process.env, FORGESYNC_DATA_DIR: app.config.dataDir, FORGESYNC_DATABASE_URL: app.config.databaseUrl, FORGESYNC_GIT_PROTOCOLS: 'file' };
  try {
    const { stdout, stderr } = await run(process.execPath, [CLI, ...args], { env });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const failed = error as { code: number; stdout: string; stderr: string };
    return { code: failed.code, stdout: failed.stdout, stderr: failed.stderr };
  }
}

/** A response body with `handle` replaced, to compare the answers about two different handles. */
const bodyWithout = (response: LightMyRequestResponse, handle: string) => ({ status: response.statusCode, body: response.body.replaceAll(handle, '<handle>') });

/** Expects no string anywhere in an HTTP answer to name a place in the server's data directory. */
function expectNoServerPath(json: unknown, dataDir: string): void {
  const strings: string[] = [];
  const visit = (node: unknown): void => {
    if (typeof node === 'string') strings.push(node);
    else if (node !== null && typeof node === 'object') for (const value of Object.values(node)) visit(value);
  };
  visit(json);
  expect(strings.length).toBeGreaterThan(0);
  for (const text of strings) expect(text.startsWith(dataDir) || text.includes(dataDir), text).toBe(false);
}

/** Expects `expiresAt` to lie `ms` from now (give or take the test's own duration). */
function expectExpiresIn(expiresAt: string, ms: number): void {
  const left = Date.parse(expiresAt) - Date.now();
  expect(left).toBeLessThanOrEqual(ms);
  expect(left).toBeGreaterThan(ms - 60_000);
}

describe('HTTP API: snapshots', () => {
  let t: TestServer;
  let upstream: Upstream;
  const call = (method: 'GET' | 'POST' | 'DELETE', url: string, body?: unknown, token: string | null = READ) =>
    t.server.inject({ method, url, headers: t.auth(token), ...(body !== undefined ? { payload: body as object } : {}) });

  // A second instance with a server of its own, as a second `forgesync serve` would be:
  // the same snapshots, a different read token.
  let second: Forgesync;
  let otherServer: ForgesyncServer;
  const callOther = (method: 'GET' | 'DELETE', url: string) => otherServer.inject({ method, url, headers: t.auth(OTHER_READ) });

  beforeAll(async () => {
    // A configured default hold above the API's cap: the cap wins on the API.
    t = await startTestServer({ tokens: { admin: ADMIN, read: READ }, env: { FORGESYNC_SNAPSHOT_API_MAX_HOLD: '2h', FORGESYNC_SNAPSHOT_HOLD: '3h' } });
    upstream = Upstream.create();
    await t.app.replication.addSource({ url: upstream.bare, name: 'app' });
    ({ app: second } = await openTestForgesync(t.app.config));
    otherServer = await buildServer(second, { tokens: { admin: ADMIN, read: OTHER_READ } });
    await otherServer.ready();
  });
  afterAll(async () => {
    await otherServer?.close();
    await second?.close();
    await t?.close();
  });

  it('creates a snapshot after a sync, lists it with its hold, and releases it', async () => {
    const sha = upstream.commit('main', 2);
    const created = await call('POST', '/api/sources/app/snapshots', { ref: 'main', sync: true });
    expect(created.statusCode, created.body).toBe(201);
    const body = created.json();
    expect(body).toMatchObject({ source: 'app', ref: 'main', sha, stale: false, temporaryClone: false, expiresAt: expect.any(String) });
    // A handle, never the directory on the server (the operator's CLI and the library have it).
    expect(body).not.toHaveProperty('path');
    expectNoServerPath(body, t.app.config.dataDir);
    const path = t.app.snapshots.list().find((entry) => entry.sha === sha)!.path;
    for (const file of git(upstream.bare, 'ls-tree', '--name-only', sha).split('\n')) {
      expect(readFileSync(join(path, file), 'utf8')).toBe(git(upstream.bare, 'cat-file', 'blob', `${sha}:${file}`) + '\n');
    }

    const listed = await call('GET', '/api/snapshots');
    expect(listed.json()).toEqual([
      expect.objectContaining({ source: 'app', sha, holds: [expect.objectContaining({ handle: body.handle, owner: 'api', creator: expect.stringMatching(/^[0-9a-f]{16}$/) })] }),
    ]);
    expect(listed.json()[0]).not.toHaveProperty('path');
    expectNoServerPath(listed.json(), t.app.config.dataDir);

    expect((await call('DELETE', `/api/snapshots/${body.handle}`)).statusCode).toBe(204);
    expect((await call('DELETE', `/api/snapshots/${body.handle}`)).statusCode).toBe(404);
    expect((await call('GET', '/api/snapshots')).json()[0].holds).toEqual([]);
    expect(existsSync(path)).toBe(true);
  });

  it('caps holdMs at FORGESYNC_SNAPSHOT_API_MAX_HOLD, and the default hold likewise', async () => {
    upstream.commit('main');
    await t.app.replication.sync('app');
    const holds = () => snapshotHolds(t.app).live().length;
    const before = holds();

    const tooLong = await call('POST', '/api/sources/app/snapshots', { ref: 'main', holdMs: 2 * HOUR + 1 });
    expect(tooLong.statusCode, tooLong.body).toBe(400);
    expect(tooLong.json().message).toBe(
      'invalid request: /holdMs must be at most 7200000 ms (2h, FORGESYNC_SNAPSHOT_API_MAX_HOLD): ask for a shorter hold and open the snapshot ' +
        'again when it lapses, or have the operator hold it longer with forgesync snapshot --hold',
    );
    expect(holds()).toBe(before);

    const atCap = await call('POST', '/api/sources/app/snapshots', { ref: 'main', holdMs: 2 * HOUR });
    expect(atCap.statusCode, atCap.body).toBe(201);
    expectExpiresIn(atCap.json().expiresAt, 2 * HOUR);
    // FORGESYNC_SNAPSHOT_HOLD is 3h here: an API snapshot without holdMs gets the cap.
    const byDefault = await call('POST', '/api/sources/app/snapshots', { ref: 'main' });
    expect(byDefault.statusCode, byDefault.body).toBe(201);
    expectExpiresIn(byDefault.json().expiresAt, 2 * HOUR);
    // The OpenAPI document states the cap.
    const openapi = (await t.server.inject({ method: 'GET', url: '/openapi.json', headers: t.auth(READ) })).json();
    const body = openapi.paths['/api/sources/{name}/snapshots'].post.requestBody.content['application/json'].schema;
    expect(body.properties.holdMs.maximum).toBe(2 * HOUR);

    for (const response of [atCap, byDefault]) expect((await call('DELETE', `/api/snapshots/${response.json().handle}`)).statusCode).toBe(204);
  });

  it("shows and releases a hold only to the token that made it: another gets the 404 of a handle that does not exist", async () => {
    const sha = upstream.commit('main');
    await t.app.replication.sync('app');
    const mine = (await call('POST', '/api/sources/app/snapshots', { ref: sha })).json();
    const listedBy = async (response: Promise<LightMyRequestResponse>) => {
      const listed = await response;
      expect(listed.statusCode).toBe(200);
      return { entry: listed.json().find((entry: { sha: string }) => entry.sha === sha), body: listed.body };
    };

    // The other read token, and the admin token, see the snapshot but never the handle.
    for (const listing of [callOther('GET', '/api/snapshots'), call('GET', '/api/snapshots', undefined, ADMIN)]) {
      const { entry, body } = await listedBy(listing);
      expect(entry).toMatchObject({ sha, holds: [] });
      expect(body).not.toContain(mine.handle);
    }
    expect((await listedBy(call('GET', '/api/snapshots'))).entry.holds).toEqual([expect.objectContaining({ handle: mine.handle })]);

    // Releasing it answers exactly like a handle that never existed, and leaves it held.
    const unknown = randomBytes(10).toString('hex');
    const foreign = await callOther('DELETE', `/api/snapshots/${mine.handle}`);
    const missing = await callOther('DELETE', `/api/snapshots/${unknown}`);
    expect(foreign.statusCode).toBe(404);
    expect(bodyWithout(foreign, mine.handle)).toEqual(bodyWithout(missing, unknown));
    const byAdmin = await call('DELETE', `/api/snapshots/${mine.handle}`, undefined, ADMIN);
    expect(bodyWithout(byAdmin, mine.handle)).toEqual(bodyWithout(missing, unknown));
    expect(snapshotHolds(t.app).find(mine.handle)).toMatchObject({ handle: mine.handle, sha });

    // The other token's own hold of the same commit is its own to see and release.
    const theirs = (await otherServer.inject({ method: 'POST', url: '/api/sources/app/snapshots', headers: t.auth(OTHER_READ), payload: { ref: sha } })).json();
    // The same snapshot on disk, held twice.
    expect(theirs.sha).toBe(mine.sha);
    expect(t.app.snapshots.list().filter((entry) => entry.sha === sha)).toHaveLength(1);
    expect((await listedBy(callOther('GET', '/api/snapshots'))).entry.holds.map((hold: { handle: string }) => hold.handle)).toEqual([theirs.handle]);
    expect((await listedBy(call('GET', '/api/snapshots'))).entry.holds.map((hold: { handle: string }) => hold.handle)).toEqual([mine.handle]);
    expect(bodyWithout(await call('DELETE', `/api/snapshots/${theirs.handle}`), theirs.handle)).toEqual(bodyWithout(missing, unknown));
    expect((await callOther('DELETE', `/api/snapshots/${theirs.handle}`)).statusCode).toBe(204);
    expect((await call('DELETE', `/api/snapshots/${mine.handle}`)).statusCode).toBe(204);
  });

  it('leaves the CLI (the operator) listing and releasing every hold, and holding beyond the API cap', async () => {
    const sha = upstream.commit('main');
    await t.app.replication.sync('app');
    const viaApi = (await call('POST', '/api/sources/app/snapshots', { ref: sha })).json();

    const cliHold = await forgesyncCli(t.app, 'snapshot', 'app', '--ref', sha, '--hold', '48h', '--json');
    expect(cliHold.code, cliHold.stderr).toBe(0);
    const fromCli = JSON.parse(cliHold.stdout);
    expectExpiresIn(fromCli.expiresAt, 48 * HOUR);
    // The operator's CLI shows where the snapshot lies; API answers do not.
    expect(fromCli.path.startsWith(t.app.config.dataDir)).toBe(true);

    const listed = await forgesyncCli(t.app, 'snapshot', 'list', '--json');
    expect(listed.code, listed.stderr).toBe(0);
    const entry = JSON.parse(listed.stdout).find((candidate: { sha: string }) => candidate.sha === sha);
    expect(entry.holds).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ handle: viaApi.handle, owner: 'api', creator: expect.stringMatching(/^[0-9a-f]{16}$/) }),
        expect.objectContaining({ handle: fromCli.handle, owner: 'cli', creator: null }),
      ]),
    );
    // The text listing says whose each hold is, and what held snapshots take of the budget.
    const text = (await forgesyncCli(t.app, 'snapshot', 'list')).stdout;
    expect(text).toContain(`${viaApi.handle}(api, token ${entry.holds.find((hold: { owner: string }) => hold.owner === 'api').creator})`);
    expect(text).toContain(`${fromCli.handle}(cli)`);
    expect(text).toContain(`held: ${formatBytes(entry.bytes)} of 10 GiB (FORGESYNC_SNAPSHOT_MAX_BYTES)\n`);
    // No API caller sees the CLI's hold.
    const apiHolds = (await call('GET', '/api/snapshots')).json().find((candidate: { sha: string }) => candidate.sha === sha).holds;
    expect(apiHolds.map((hold: { handle: string }) => hold.handle)).toEqual([viaApi.handle]);

    // The operator releases anyone's.
    expect((await forgesyncCli(t.app, 'snapshot', 'release', viaApi.handle)).code).toBe(0);
    expect((await forgesyncCli(t.app, 'snapshot', 'release', fromCli.handle)).code).toBe(0);
    expect(t.app.snapshots.list().find((candidate) => candidate.sha === sha)?.holds).toEqual([]);
  });

  it('reads a file and a directory of any ref without materialising', async () => {
    const sha = upstream.commit('main');
    await t.app.replication.sync('app');
    const file = git(upstream.bare, 'ls-tree', '--name-only', sha).split('\n')[0] as string;
    const blob = await call('GET', `/api/sources/app/contents?ref=${sha}&path=${encodeURIComponent(file)}`);
    expect(blob.json()).toEqual({ type: 'blob', sha, path: file, size: expect.any(Number), encoding: 'utf8', content: git(upstream.bare, 'cat-file', 'blob', `${sha}:${file}`) + '\n' });
    const tree = await call('GET', '/api/sources/app/contents?ref=main');
    expect(tree.json()).toMatchObject({ type: 'tree', sha, path: '' });
    expect(tree.json().entries.map((entry: { name: string }) => entry.name)).toContain(file);
  });

  it('answers bad requests with clear errors and no token with 401', async () => {
    const cases: [string, unknown, number, RegExp][] = [
      ['/api/sources/app/snapshots', { ref: '../../etc' }, 400, /not a valid branch/],
      ['/api/sources/app/snapshots', { ref: 'no-such-branch' }, 404, /is not a branch, tag or commit of app/],
      ['/api/sources/nope/snapshots', { ref: 'main' }, 404, /no source named "nope"/],
      ['/api/sources/app/snapshots', { ref: 'main', extra: 1 }, 400, /invalid request/],
    ];
    for (const [url, body, status, message] of cases) {
      const response = await call('POST', url, body);
      expect(response.statusCode, response.body).toBe(status);
      expect(response.json().message).toMatch(message);
    }
    expect((await call('GET', '/api/sources/app/contents?ref=main&path=../x')).statusCode).toBe(400);
    expect((await call('GET', '/api/sources/app/contents?ref=main&path=missing')).statusCode).toBe(404);
    expect((await call('POST', '/api/sources/app/snapshots', { ref: 'main' }, null)).statusCode).toBe(401);
  });

  it('says why a temporary clone failed without naming directories on the server', async () => {
    const gone = Upstream.create(undefined, 'gone.git');
    gone.commit('main');
    await t.app.replication.addSource({ url: gone.bare, name: 'gone' });
    rmSync(gone.bare, { recursive: true, force: true });
    const response = await call('POST', '/api/sources/gone/snapshots', { ref: 'main', waitMs: 2000 });
    expect(response.statusCode, response.body).toBe(409);
    // git's command line and words, the server's directories as placeholders (the temporary clone's under the snapshots).
    expect(response.json().message).toMatch(/^gone has no mirror yet and a temporary clone of it failed: git clone .* <snapshots>\/\.clones\/\.tmp-\S+\/repo\.git failed with exit code \d+: /);
    expectNoServerPath(response.json(), t.app.config.dataDir);
    expect(response.body).not.toContain(tmpdir());
  });
});

describe('HTTP API: the byte budget of held snapshots', () => {
  let t: TestServer;
  let upstream: Upstream;
  const post = (ref: string) => t.server.inject({ method: 'POST', url: '/api/sources/app/snapshots', headers: t.auth(READ), payload: { ref } });

  /** Pushes a commit whose `big.txt` is `size` bytes of `fill`; returns its sha. */
  const commitSized = (size: number, fill: string) => {
    writeFileSync(join(upstream.work, 'big.txt'), `${fill.repeat(size - 1)}\n`);
    git(upstream.work, 'add', '-A');
    git(upstream.work, 'commit', '-q', '-m', `big.txt of ${fill}`);
    git(upstream.work, 'push', '-q', 'origin', 'main');
    return git(upstream.work, 'rev-parse', 'HEAD');
  };
  const treeBytes = (sha: string) =>
    git(upstream.bare, 'ls-tree', '-r', '-l', sha)
      .split('\n')
      .reduce((sum, line) => sum + Number(line.split(/\s+/)[3]), 0);

  beforeAll(async () => {
    // Room for one of the commits below held, not two.
    t = await startTestServer({ tokens: { read: READ }, env: { FORGESYNC_SNAPSHOT_MAX_BYTES: '6000' } });
    upstream = Upstream.create();
    await t.app.replication.addSource({ url: upstream.bare, name: 'app' });
  });
  afterAll(async () => {
    await t?.close();
  });

  it('answers 409 saying what is held, the limit and what to do, leaves nothing behind, and succeeds after a release', async () => {
    const a = commitSized(4000, 'a');
    const b = commitSized(4000, 'b');
    await t.app.replication.sync('app');
    const first = await post(a);
    expect(first.statusCode, first.body).toBe(201);
    const pathOf = (sha: string) => t.app.snapshots.list().find((entry) => entry.sha === sha)!.path;
    const sourceDir = join(pathOf(a), '..');
    const before = { files: readdirSync(sourceDir).sort(), holds: readdirSync(join(t.app.config.snapshotsDir, '.holds')).sort() };

    const refused = await post(b);
    expect(refused.statusCode).toBe(409);
    expect(refused.json()).toEqual({
      error: 'SnapshotBudgetExceededError',
      message:
        `cannot hold app@${b}: it takes ${formatBytes(treeBytes(b))} and held snapshots already take ${formatBytes(treeBytes(a))} of the ` +
        `${formatBytes(6000)} FORGESYNC_SNAPSHOT_MAX_BYTES allows; release holds you no longer need (forgesync snapshot list, then ` +
        'forgesync snapshot release <handle>; API callers: DELETE /api/snapshots/<handle>) or raise FORGESYNC_SNAPSHOT_MAX_BYTES',
    });
    // No snapshot directory, record, index or temp directory of b; no hold.
    expect(readdirSync(sourceDir).sort()).toEqual(before.files);
    expect(readdirSync(join(t.app.config.snapshotsDir, '.holds')).sort()).toEqual(before.holds);
    expect(existsSync(join(sourceDir, b))).toBe(false);

    expect((await t.server.inject({ method: 'DELETE', url: `/api/snapshots/${first.json().handle}`, headers: t.auth(READ) })).statusCode).toBe(204);
    const retried = await post(b);
    expect(retried.statusCode, retried.body).toBe(201);
    expect(readFileSync(join(pathOf(b), 'big.txt'), 'utf8')).toBe(`${'b'.repeat(3999)}\n`);
    // The released snapshot, unheld now, made room (evicted by the pass holding b started).
    const shas = () => t.app.snapshots.list().map((entry) => entry.sha);
    await eventually('the unheld snapshot to be evicted', () => shas().length === 1);
    expect(shas()).toEqual([b]);
  });
});
