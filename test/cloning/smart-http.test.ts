import { execFile } from 'node:child_process';
import { request as httpRequest } from 'node:http';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { git, gitAsync, removeTempDirs, tempDir, Upstream } from '../support/git-fixtures.js';
import { startTestServer, type TestServer } from '../support/test-server.js';
import { eventually } from '../support/eventually.js';
import { testSecret } from '../support/secrets.js';

/*
 * Real git clients against forgesync's smart HTTP: clones and fetches in
 * protocol v0 and v2, partial and shallow, ls-remote; pushes refused; git's
 * own authentication dance (a first request without credentials, then the
 * token as Basic password or Bearer).
 */

const run = promisify(execFile);
const READ = testSecret('CLONE_READ_TOKEN');

/** How many upload-packs run on the mirrors under `mirrorsDir` (this file's server's only: other files run their own in parallel). */
async function uploadPacksUnder(mirrorsDir: string): Promise<number> {
  const { stdout } = await run('pgrep', ['-f', `upload-pack --stateless-rpc ${mirrorsDir}/`]).catch(() => ({ stdout: '' }));
  return stdout.trim().split('\n').filter(Boolean).length;
}

/** `refname → sha` lines, sorted, of `git ls-remote`-shaped output or `show-ref`. */
function refLines(text: string, prefix = 'refs/'): string[] {
  return text
    .split('\n')
    .map((line) => line.trim().split(/\s+/))
    .filter(([, ref]) => ref?.startsWith(prefix) && !ref.endsWith('^{}'))
    .map(([sha, ref]) => `${ref} ${sha}`)
    .sort();
}

describe('cloning over smart HTTP', () => {
  let t: TestServer;
  let upstream: Upstream;
  let base: string;
  const bearer = ['-c', `http.extraHeader=Authorization: Bearer ${READ}`];

  beforeAll(async () => {
    t = await startTestServer({ listen: true, tokens: { read: READ } });
    upstream = Upstream.create(tempDir());
    for (let i = 0; i < 5; i++) upstream.commit();
    upstream.branch('feature');
    upstream.tag('v1', true);
    upstream.publish();
    await t.app.replication.addSource({ name: 'widgets', url: upstream.bare });
    expect((await t.app.replication.sync('widgets')).served).toBe(true);
    base = `${t.url}/git`;
  });

  afterAll(async () => {
    await t?.close();
    removeTempDirs();
  });

  it('lists the refs with ls-remote, as the upstream has them, with and without .git', async () => {
    const expected = refLines(git(upstream.bare, 'show-ref'));
    expect(refLines(await gitAsync(tempDir(), ...bearer, 'ls-remote', `${base}/widgets.git`))).toEqual(expected);
    expect(refLines(await gitAsync(tempDir(), ...bearer, '-c', 'protocol.version=0', 'ls-remote', `${base}/widgets`))).toEqual(expected);
  });

  for (const version of ['0', '2']) {
    it(`clones in protocol v${version} with the token as Basic password, then fetches what the upstream added`, async () => {
      const dir = tempDir();
      const url = `${t.url!.replace('http://', `http://anyone:${READ}@`)}/git/widgets.git`;
      await gitAsync(dir, '-c', `protocol.version=${version}`, 'clone', '-q', url, 'copy');
      const copy = join(dir, 'copy');
      expect(git(copy, 'rev-parse', 'HEAD')).toBe(git(upstream.bare, 'rev-parse', 'main'));
      expect(git(copy, 'rev-parse', 'origin/feature')).toBe(git(upstream.bare, 'rev-parse', 'feature'));
      await gitAsync(copy, 'fsck', '--strict');

      const next = upstream.commit();
      upstream.publish();
      expect((await t.app.replication.sync('widgets')).served).toBe(true);
      await gitAsync(copy, '-c', `protocol.version=${version}`, 'fetch', '-q', 'origin');
      expect(git(copy, 'rev-parse', 'origin/main')).toBe(next);
    });
  }

  it('serves partial clones (blob:none, tree:0, blob:limit) that fetch what they left out on checkout', async () => {
    for (const filter of ['blob:none', 'tree:0', 'blob:limit=1']) {
      const dir = tempDir();
      await gitAsync(dir, ...bearer, 'clone', '-q', `--filter=${filter}`, `${base}/widgets.git`, 'copy');
      const copy = join(dir, 'copy');
      expect(git(copy, 'config', 'remote.origin.partialclonefilter')).toBe(filter);
      expect(git(copy, 'show', 'HEAD:file.txt')).toBe(git(upstream.bare, 'show', 'main:file.txt'));
    }
  });

  it('serves shallow clones and deepens them', async () => {
    const dir = tempDir();
    await gitAsync(dir, ...bearer, 'clone', '-q', '--depth', '1', `${base}/widgets.git`, 'copy');
    const copy = join(dir, 'copy');
    expect(git(copy, 'rev-list', '--count', 'HEAD')).toBe('1');
    await gitAsync(copy, ...bearer, 'fetch', '-q', '--deepen', '2');
    expect(git(copy, 'rev-list', '--count', 'HEAD')).toBe('3');
    await gitAsync(copy, ...bearer, 'fetch', '-q', '--shallow-since', '2000-01-01');
    expect(git(copy, 'rev-list', '--count', 'HEAD')).toBe(git(upstream.bare, 'rev-list', '--count', 'main'));
  });

  it('shows a clone during a sync the refs from before it or after it, never a mix, each with its objects', async () => {
    const racing = Upstream.create(tempDir(), 'racing');
    const BRANCHES = 40;
    /** Every branch moved to a commit of its own; returns the branch → sha map the upstream then has. */
    const moveAll = (round: number) => {
      for (let i = 0; i < BRANCHES; i++) racing.commit(`round ${round} branch ${i}`, `b${i}`);
      racing.publish();
      return refLines(git(racing.bare, 'show-ref'), 'refs/heads/b').join('\n');
    };
    const before = moveAll(1);
    await t.app.replication.addSource({ name: 'racing', url: racing.bare });
    expect((await t.app.replication.sync('racing')).served).toBe(true);
    const after = moveAll(2);
    const seen = new Set<string>();
    // The sync's fetch waits a little, so that readers list the refs before it, across it and after it.
    const { runner } = t.app;
    const plainRun = runner.run.bind(runner);
    runner.run = async (args, options) => {
      if (args.includes('fetch')) await new Promise((resolve) => setTimeout(resolve, 500));
      return plainRun(args, options);
    };
    let done = false;
    const syncing = t.app.replication.sync('racing').finally(() => {
      done = true;
      runner.run = plainRun;
    });
    const listings: Promise<void>[] = [];
    for (let reader = 0; reader < 3; reader++) {
      listings.push(
        (async () => {
          for (let i = 0; !done || i < 2; i++) {
            const listing = refLines(await gitAsync(tempDir(), ...bearer, 'ls-remote', `${base}/racing.git`), 'refs/heads/b').join('\n');
            expect([before, after], 'a listing mixing the two states').toContain(listing);
            seen.add(listing === before ? 'before' : 'after');
          }
        })(),
      );
    }
    // A clone while the sync runs gets every object its refs name.
    const dir = tempDir();
    await gitAsync(dir, ...bearer, 'clone', '-q', '--mirror', `${base}/racing.git`, 'copy.git');
    await gitAsync(join(dir, 'copy.git'), 'fsck', '--strict');
    expect([before, after]).toContain(refLines(git(join(dir, 'copy.git'), 'show-ref'), 'refs/heads/b').join('\n'));
    await Promise.all(listings);
    expect((await syncing).served).toBe(true);
    expect([...seen].sort()).toEqual(['after', 'before']);
  });

  it('refuses pushes: the copy is read-only', async () => {
    const dir = tempDir();
    await gitAsync(dir, ...bearer, 'clone', '-q', `${base}/widgets.git`, 'copy');
    const copy = join(dir, 'copy');
    git(copy, 'commit', '-q', '--allow-empty', '-m', 'local');
    const failed = await gitAsync(copy, ...bearer, 'push', 'origin', 'HEAD:main').catch((error: { stderr: string }) => error);
    expect((failed as { stderr: string }).stderr).toMatch(/read-only/);
    expect((await fetch(`${base}/widgets.git/git-receive-pack`, { method: 'POST', headers: { authorization: `Bearer ${READ}` } })).status).toBe(403);
  });

  it("answers git's first, credential-less request with a Basic challenge that is never counted as a failure", async () => {
    for (let i = 0; i < 30; i++) {
      const answer = await fetch(`${base}/widgets.git/info/refs?service=git-upload-pack`);
      expect(answer.status).toBe(401);
      expect(answer.headers.get('www-authenticate')).toBe('Basic realm="forgesync"');
    }
    // 30 challenges later (the failure limit is 20), a wrong token is still just refused, not throttled.
    const wrong = await fetch(`${base}/widgets.git/info/refs?service=git-upload-pack`, { headers: { authorization: `Basic ${Buffer.from('x:not-the-token').toString('base64')}` } });
    expect(wrong.status).toBe(401);
    const right = await fetch(`${base}/widgets.git/info/refs?service=git-upload-pack`, { headers: { authorization: `Basic ${Buffer.from(`x:${READ}`).toString('base64')}` } });
    expect(right.status).toBe(200);
    expect(right.headers.get('content-type')).toBe('application/x-git-upload-pack-advertisement');
    expect(await right.text()).toMatch(/^001e# service=git-upload-pack\n0000/);
  });

  it('answers 404 for unknown names and paths that leave the tree, the same whatever exists', async () => {
    const headers = { authorization: `Bearer ${READ}` };
    // (A client normalises `a/../b` itself: these reach the server as written.)
    for (const path of ['nothing.git', '..%2F..%2Fetc', 'widgets%2F..%2Fwidgets', '%2e%2e%2Fwidgets', 'widgets%00']) {
      const answer = await fetch(`${base}/${path}/info/refs?service=git-upload-pack`, { headers });
      expect(answer.status, path).toBe(404);
    }
  });

  it('accepts a gzip request body (as git sends large negotiations)', async () => {
    const pkt = (line: string) => (Buffer.byteLength(line) + 4).toString(16).padStart(4, '0') + line;
    const body = gzipSync(`${pkt('command=ls-refs\n')}0001${pkt('symrefs\n')}0000`);
    const answer = await fetch(`${base}/widgets.git/git-upload-pack`, {
      method: 'POST',
      headers: { authorization: `Bearer ${READ}`, 'content-type': 'application/x-git-upload-pack-request', 'content-encoding': 'gzip', 'git-protocol': 'version=2' },
      body,
    });
    expect(answer.status).toBe(200);
    const text = await answer.text();
    expect(text).toContain(`${git(upstream.bare, 'rev-parse', 'main')} refs/heads/main`);
    expect(text).toContain('HEAD symref-target:refs/heads/main');
  });

  it('stops upload-pack when a stalled client goes away', async () => {
    const running = () => uploadPacksUnder(t.app.config.mirrorsDir);
    const before = await running();
    const outgoing = httpRequest(new URL(`${base}/widgets.git/git-upload-pack`), {
      method: 'POST',
      headers: { authorization: `Bearer ${READ}`, 'content-type': 'application/x-git-upload-pack-request', 'transfer-encoding': 'chunked' },
    });
    outgoing.on('error', () => undefined);
    // Half a negotiation, then nothing: upload-pack waits for the rest.
    outgoing.write('0032want ');
    await eventually('upload-pack started for the stalled request', async () => ((await running()) > before ? true : null));
    outgoing.destroy();
    await eventually('upload-pack stopped once the client went away', async () => ((await running()) === before ? true : null));
  });

  it('refuses a request body announced over the cap before reading it', async () => {
    const url = new URL(`${base}/widgets.git/git-upload-pack`);
    const status = await new Promise<number>((resolve, reject) => {
      const outgoing = httpRequest(url, {
        method: 'POST',
        headers: { authorization: `Bearer ${READ}`, 'content-type': 'application/x-git-upload-pack-request', 'content-length': String(2 * 1024 ** 3) },
      });
      outgoing.on('response', (response) => {
        response.resume();
        resolve(response.statusCode ?? 0);
        outgoing.destroy();
      });
      outgoing.on('error', reject);
      outgoing.write('0000');
    });
    expect(status).toBe(413);
  });

  it('answers a want of an object that is not there with git\'s own error, and stops', async () => {
    const pkt = (line: string) => (Buffer.byteLength(line) + 4).toString(16).padStart(4, '0') + line;
    const missing = 'f'.repeat(40);
    const answer = await fetch(`${base}/widgets.git/git-upload-pack`, {
      method: 'POST',
      headers: { authorization: `Bearer ${READ}`, 'content-type': 'application/x-git-upload-pack-request' },
      body: `${pkt(`want ${missing} multi_ack_detailed side-band-64k\n`)}0000${pkt('done\n')}`,
    });
    expect(await answer.text()).toContain(`not our ref ${missing}`);
  });

  it('cuts a streamed request body of 1 GB off at the cap, and keeps serving', async () => {
    const running = () => uploadPacksUnder(t.app.config.mirrorsDir);
    const before = await running();
    // A negotiation that never ends: one want, then `have` lines, which upload-pack keeps reading.
    const want = git(upstream.bare, 'rev-parse', 'main');
    const have = `0032have ${'e'.repeat(40)}\n`;
    const chunk = Buffer.from(have.repeat(Math.floor((1024 * 1024) / have.length)));
    let sent = 0;
    await new Promise<void>((resolve) => {
      const outgoing = httpRequest(new URL(`${base}/widgets.git/git-upload-pack`), {
        method: 'POST',
        headers: { authorization: `Bearer ${READ}`, 'content-type': 'application/x-git-upload-pack-request', 'transfer-encoding': 'chunked' },
      });
      const finish = () => {
        outgoing.destroy();
        resolve();
      };
      outgoing.on('error', finish);
      outgoing.on('response', (response) => {
        response.on('error', finish).on('close', finish).resume();
      });
      outgoing.write(`0032want ${want}\n0000`);
      const pump = () => {
        while (sent < 1024 ** 3 && !outgoing.destroyed) {
          sent += chunk.length;
          if (!outgoing.write(chunk)) return void outgoing.once('drain', pump);
        }
        outgoing.end();
      };
      pump();
    });
    // The server stopped reading at the cap, long before the gigabyte was sent.
    expect(sent).toBeGreaterThan(32 * 1024 * 1024);
    expect(sent).toBeLessThan(1024 ** 3);
    await eventually('no upload-pack left running', async () => ((await running()) === before ? true : null));
    expect(refLines(await gitAsync(tempDir(), ...bearer, 'ls-remote', `${base}/widgets.git`))).not.toHaveLength(0);
  });
});
