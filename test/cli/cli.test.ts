import { execFile, spawn } from 'node:child_process';
import { once } from 'node:events';
import { get as httpGet } from 'node:http';
import { mkdtempSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { dirname } from 'node:path';
import { refsOf } from '../support/harness.js';
import { LOOPBACK_NETWORKS } from '../support/egress.js';
import { git } from '../support/git-fixtures.js';
import { GitHttpServer } from '../support/git-http-server.js';
import { Upstream } from '../support/upstream.js';

const CLI = fileURLToPath(new URL('../../bin/forgesync.js', import.meta.url));
const run = promisify(execFile);

function cliEnv(dataDir: string): NodeJS.ProcessEnv {
  return {
    ...process.env,
    FORGESYNC_DATA_DIR: dataDir,
    FORGESYNC_GIT_PROTOCOLS: 'https,ssh,file',
    FORGESYNC_SCHEDULER_TICK: '200ms',
    // The test's git server listens on 127.0.0.1, which forgesync refuses unless allowed.
    FORGESYNC_ALLOW_NETWORKS: LOOPBACK_NETWORKS,
  };
}

/** Runs the CLI; resolves with exit code and output (never rejects on a non-zero exit). */
async function forgesync(dataDir: string, ...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await run(process.execPath, [CLI, ...args], { env: cliEnv(dataDir) });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const failed = error as { code: number; stdout: string; stderr: string };
    return { code: failed.code, stdout: failed.stdout, stderr: failed.stderr };
  }
}

describe('forgesync CLI', () => {
  it('adds, syncs, reports, resyncs and removes a source', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'forgesync-cli-'));
    const upstream = Upstream.create();
    const added = await forgesync(dataDir, 'add', upstream.bare, '--name', 'demo', '--interval', '30m');
    expect(added.code).toBe(0);
    expect(added.stdout).toContain('added demo');

    const synced = await forgesync(dataDir, 'sync', 'demo', '--wait', '--json');
    expect(synced.code).toBe(0);
    const status = JSON.parse((await forgesync(dataDir, 'status', 'demo', '--json')).stdout);
    expect(status).toMatchObject({ name: 'demo', url: upstream.bare, state: 'synced', retryCount: 0, nextRetryAt: null, lastFailure: null });
    expect(status.checksum).toMatch(/^[0-9a-f]{64}$/);
    expect(new Date(status.lastSyncedAt).getTime()).toBeGreaterThan(0);
    // The operator's view keeps the mirror's absolute path (HTTP answers give it relative to the mirrors directory).
    expect(status.mirrorPath.startsWith(join(dataDir, 'mirrors'))).toBe(true);
    expect(refsOf(status.mirrorPath)).toBe(refsOf(upstream.bare));

    const all = JSON.parse((await forgesync(dataDir, 'status', '--json')).stdout);
    expect(all).toHaveLength(1);
    expect((await forgesync(dataDir, 'resync', '--failed', '--json')).stdout).toContain('"requested": 0');
    expect((await forgesync(dataDir, 'resync', '--all', '--json')).stdout).toContain('"requested": 1');
    expect((await forgesync(dataDir, 'resync')).code).toBe(2);
    expect(JSON.parse((await forgesync(dataDir, 'status', 'demo', '--json')).stdout).state).toBe('pending');

    expect((await forgesync(dataDir, 'remove', 'demo')).code).toBe(0);
    const gone = await forgesync(dataDir, 'status', 'demo');
    expect(gone.code).toBe(1);
    expect(gone.stderr).toContain('no source named "demo"');
  });

  it('eight concurrent sync --wait after a push all exit 0: each request is served, whichever process ran the round', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'forgesync-cli-'));
    const upstream = Upstream.create();
    expect((await forgesync(dataDir, 'add', upstream.bare, '--name', 'busy')).code).toBe(0);
    expect((await forgesync(dataDir, 'sync', 'busy', '--wait')).code).toBe(0);
    upstream.commit('main', 3);
    const runs = await Promise.all(Array.from({ length: 8 }, () => forgesync(dataDir, 'sync', 'busy', '--wait', '--json')));
    for (const result of runs) expect(result.code, result.stdout + result.stderr).toBe(0);
    const status = JSON.parse((await forgesync(dataDir, 'status', 'busy', '--json')).stdout);
    expect(status).toMatchObject({ state: 'synced' });
    expect(status.completedSeq).toBe(status.requestedSeq);
    expect(refsOf(status.mirrorPath)).toBe(refsOf(upstream.bare));
  });

  it('snapshot --json, show, snapshot list and snapshot release', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'forgesync-cli-'));
    const upstream = Upstream.create();
    const sha = upstream.commit('feature/x', 2);
    expect((await forgesync(dataDir, 'add', upstream.bare, '--name', 'demo')).code).toBe(0);

    const made = await forgesync(dataDir, 'snapshot', 'demo', '--ref', 'feature/x', '--sync', '--json');
    expect(made.code, made.stderr).toBe(0);
    const snapshot = JSON.parse(made.stdout);
    expect(snapshot).toMatchObject({ source: 'demo', ref: 'feature/x', sha, stale: false, handle: expect.any(String), expiresAt: expect.any(String) });
    const files = git(upstream.bare, 'ls-tree', '--name-only', sha).split('\n');
    expect(readdirSync(snapshot.path).sort()).toEqual(files.sort());

    const shown = await forgesync(dataDir, 'show', 'demo', `${sha}:${files[0]}`);
    expect(shown.stdout).toBe(git(upstream.bare, 'cat-file', 'blob', `${sha}:${files[0]}`) + '\n');
    expect((await forgesync(dataDir, 'show', 'demo', 'feature/x:')).stdout).toContain(`\t${files[0]}\n`);
    const escape = await forgesync(dataDir, 'show', 'demo', 'main:../../etc/passwd');
    expect(escape.code).toBe(1);
    expect(escape.stderr).toContain('contains "." or ".." components');

    const listed = JSON.parse((await forgesync(dataDir, 'snapshot', 'list', '--json')).stdout);
    expect(listed).toEqual([expect.objectContaining({ sha, holds: [expect.objectContaining({ handle: snapshot.handle, owner: 'cli' })] })]);
    expect((await forgesync(dataDir, 'snapshot', 'release', snapshot.handle)).code).toBe(0);
    const again = await forgesync(dataDir, 'snapshot', 'release', snapshot.handle);
    expect(again.code).toBe(1);
    expect(again.stderr).toContain('no snapshot is held under');
    // Still cached (evicted only when the budget needs the room), now unheld.
    expect(JSON.parse((await forgesync(dataDir, 'snapshot', 'list', '--json')).stdout)[0].holds).toEqual([]);
  });

  it('rejects bad input with a clear message and stores nothing', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'forgesync-cli-'));
    const dash = await forgesync(dataDir, 'add', '--', '--upload-pack=touch /tmp/forgesync-cli-pwned');
    expect(dash.code).toBe(1);
    expect(dash.stderr).toMatch(/forgesync: .*(-|option)/);
    const ext = await forgesync(dataDir, 'add', 'ext::sh -c touch% /tmp/forgesync-cli-pwned');
    expect(ext.code).toBe(1);
    const name = await forgesync(dataDir, 'add', Upstream.create().bare, '--name', '../../etc');
    expect(name.code).toBe(1);
    expect(name.stderr).toContain('source name');
    const interval = await forgesync(dataDir, 'add', Upstream.create().bare, '--interval', 'soon');
    expect(interval.code).toBe(1);
    expect(interval.stderr).toContain('interval');
    expect(JSON.parse((await forgesync(dataDir, 'status', '--json')).stdout)).toEqual([]);
  });

  it('serve syncs pending sources and stops cleanly on SIGTERM, releasing its leases', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'forgesync-cli-'));
    const upstream = Upstream.create();
    expect((await forgesync(dataDir, 'add', upstream.bare, '--name', 'served')).code).toBe(0);
    const server = spawn(process.execPath, [CLI, 'serve', '--port', '0'], { env: cliEnv(dataDir), stdio: ['ignore', 'pipe', 'pipe'] });
    let logs = '';
    let out = '';
    server.stderr!.on('data', (chunk: Buffer) => (logs += chunk.toString()));
    server.stdout!.on('data', (chunk: Buffer) => (out += chunk.toString()));
    // The log (stderr) and the token (stdout) are two streams: either may arrive first.
    while (!/#token=\S+/.test(out) || !/"address":"http/.test(logs)) await new Promise((resolve) => setTimeout(resolve, 50));
    const address = /"address":"(http:\/\/127\.0\.0\.1:\d+)"/.exec(logs)![1]!;
    // No token configured: the API does not run open. One is generated, kept private, printed once, never logged.
    const token = /#token=(\S+)/.exec(out)![1]!;
    expect(out).toContain(`dashboard at ${address}/#token=${token}`);
    const tokenFile = join(dataDir, 'admin-token');
    expect(readFileSync(tokenFile, 'utf8').trim()).toBe(token);
    expect(statSync(tokenFile).mode & 0o777).toBe(0o600);
    expect(logs).not.toContain(token);
    expect((await fetch(`${address}/api/overview`)).status).toBe(401);
    expect((await fetch(`${address}/api/overview`, { headers: { authorization: `Bearer ${token}` } })).status).toBe(200);
    // A page elsewhere cannot drive it: a foreign Host (DNS rebinding), a text/plain POST, a foreign Origin.
    // (fetch cannot set Host; node:http can.)
    const rebound = await new Promise<number>((resolve, reject) =>
      httpGet(`${address}/api/overview`, { headers: { authorization: `Bearer ${token}`, host: 'rebind.attacker.example' } }, (res) => {
        res.resume();
        resolve(res.statusCode ?? 0);
      }).on('error', reject),
    );
    expect(rebound).toBe(421);
    const plain = await fetch(`${address}/api/resync`, { method: 'POST', headers: { 'content-type': 'text/plain' }, body: '{"filter":"all"}' });
    expect(plain.status).toBe(415);
    const foreign = await fetch(`${address}/api/resync`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', origin: 'https://attacker.example' },
      body: '{"filter":"all"}',
    });
    expect(foreign.status).toBe(403);
    expect(await (await fetch(`${address}/livez`)).json()).toEqual({ status: 'ok' });
    expect(await (await fetch(`${address}/readyz`)).json()).toMatchObject({ status: 'ok', database: 'ok', leases: 'ok' });
    const deadline = Date.now() + 20_000;
    let state = '';
    while (state !== 'synced' && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 200));
      state = JSON.parse((await forgesync(dataDir, 'status', 'served', '--json')).stdout).state;
    }
    expect(state).toBe('synced');
    const leases = JSON.parse((await forgesync(dataDir, 'lease', 'list', '--json')).stdout) as { key: string }[];
    expect(leases.map((lease) => lease.key)).toContain('scheduler:replication');
    server.kill('SIGTERM');
    const [code] = await once(server, 'exit');
    expect(code).toBe(0);
    expect(logs).toContain('"event":"shutdown"');
    expect(JSON.parse((await forgesync(dataDir, 'lease', 'list', '--json')).stdout)).toEqual([]);
  });

  it('serve stopped mid-fetch kills git, releases its leases and leaves the row pending', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'forgesync-cli-'));
    const root = dirname(Upstream.create().bare);
    const upstream = Upstream.create(root, 'slow.git');
    const http = await GitHttpServer.start({ root });
    try {
      const env = { ...cliEnv(dataDir), FORGESYNC_GIT_PROTOCOLS: 'https,ssh,http' };
      const url = http.url('slow.git');
      expect((await run(process.execPath, [CLI, 'add', url, '--name', 'slow'], { env })).stdout).toContain('added slow');
      let fetching = false;
      http.hold = (request) => request.method === 'POST' && request.path.endsWith('/git-upload-pack');
      http.onHold = () => (fetching = true);
      const server = spawn(process.execPath, [CLI, 'serve', '--port', '0'], { env, stdio: ['ignore', 'ignore', 'pipe'] });
      let logs = '';
      server.stderr!.on('data', (chunk: Buffer) => (logs += chunk.toString()));
      while (!fetching) await new Promise((resolve) => setTimeout(resolve, 50));
      server.kill('SIGTERM');
      const [code] = await once(server, 'exit');
      expect(code).toBe(0);
      expect(logs).toContain('"event":"shutdown"');
      const status = JSON.parse((await run(process.execPath, [CLI, 'status', 'slow', '--json'], { env })).stdout);
      expect(status.state).toBe('pending');
      expect(JSON.parse((await run(process.execPath, [CLI, 'lease', 'list', '--json'], { env })).stdout)).toEqual([]);
      // No git process of that server is left behind holding the upstream.
      const { stdout: ps } = await run('ps', ['-eo', 'args']);
      expect(ps.split('\n').filter((line) => line.includes(url) && /git/.test(line))).toEqual([]);
      // And the request is not lost: the next sync serves it.
      http.hold = () => false;
      expect((await run(process.execPath, [CLI, 'sync', 'slow', '--wait'], { env })).stdout).toContain('synced');
      const synced = JSON.parse((await run(process.execPath, [CLI, 'status', 'slow', '--json'], { env })).stdout);
      expect(refsOf(synced.mirrorPath)).toBe(refsOf(upstream.bare));
    } finally {
      await http.close();
    }
  });
});
