import { execFileSync as realExecFileSync } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { GitAbortedError, GitCommandError, GitTimeoutError, RemoteNotFoundError } from '../../src/git/errors.js';
import { cleanupTempDirs, localRefs, lsRemote, syncMirror } from '../../src/git/mirror.js';
import { GitRunner } from '../../src/git/runner.js';
import { anyFileContains, removeTempDirs, tempDir, Upstream } from '../support/git-fixtures.js';
import { GitHttpServer } from '../support/git-http-server.js';
import { loopbackEgress } from '../support/egress.js';
import { testSecret } from '../support/secrets.js';

const spawned = vi.hoisted(() => [] as Array<{ args: string[]; env: Record<string, string> }>);
vi.mock('node:child_process', async (importOriginal) => {
  const actual = await importOriginal<typeof import('node:child_process')>();
  const spawn = (file: string, args: string[], options: { env: Record<string, string> }) => {
    if (args[0] !== 'http-backend') spawned.push({ args: [file, ...args], env: options.env });
    return (actual.spawn as (...a: unknown[]) => unknown)(file, args, options);
  };
  return { ...actual, spawn };
});

const TOKEN = testSecret('GIT_TOKEN', 'ghs_');
const ENCODED = Buffer.from(`x-access-token:${TOKEN}`).toString('base64');

let server: GitHttpServer | undefined;
let root: string;
let upstream: Upstream;
let storage: string;

async function start(token?: string): Promise<GitHttpServer> {
  server = await GitHttpServer.start({ root, ...(token ? { token } : {}) });
  return server;
}

function unexpected(): never {
  throw new Error('expected the call to fail');
}

/** Processes whose command line mentions the test server (git, git-remote-http…). */
function processesFor(port: number): string[] {
  const out = realExecFileSync('ps', ['-eo', 'pid,args'], { encoding: 'utf8' });
  return out.split('\n').filter((line) => line.includes(`127.0.0.1:${port}`));
}

beforeEach(() => {
  spawned.length = 0;
  root = tempDir();
  storage = join(root, 'mirrors');
  upstream = Upstream.create(root, 'project');
});
afterEach(async () => {
  await server?.close();
  server = undefined;
  removeTempDirs();
});

describe('over HTTP', () => {
  const runner = new GitRunner({ protocols: new Set(['http']), egress: loopbackEgress() });

  it('passes the token as a header only: never in argv, files or errors', async () => {
    const http = await start(TOKEN);
    const url = http.url('project.git');
    const result = await syncMirror({ runner, storage, id: 1, name: 'project', url, token: TOKEN });
    expect(result).toMatchObject({ action: 'cloned', verified: true });
    expect(await localRefs(runner, result.path)).toEqual(upstream.refs());
    expect(http.requests.every((r) => r.headers.authorization === `Basic ${ENCODED}`)).toBe(true);

    upstream.commit('more');
    upstream.publish();
    expect((await syncMirror({ runner, storage, id: 1, name: 'project', url, token: TOKEN })).action).toBe('fetched');

    expect(anyFileContains(result.path, TOKEN)).toBeUndefined();
    expect(anyFileContains(result.path, ENCODED)).toBeUndefined();
    // clone, fetch, and the ls-remote git runs for the 404 below (the in-process listing leaves errors to git)
    expect(spawned.length).toBeGreaterThanOrEqual(2);
    for (const { args, env } of spawned) {
      expect(args.join(' ')).not.toContain(TOKEN);
      expect(args.join(' ')).not.toContain(ENCODED);
      const carriers = Object.entries(env).filter(([, value]) => value.includes(ENCODED)).map(([key]) => key);
      expect(carriers.every((key) => /^GIT_CONFIG_VALUE_\d+$/.test(key))).toBe(true);
    }

    const failure = await syncMirror({ runner, storage, id: 1, name: 'other', url: http.url('missing.git'), token: TOKEN }).then(unexpected, (e: Error) => e);
    expect(failure).toBeInstanceOf(RemoteNotFoundError);
    expect(failure.message).not.toContain(TOKEN);
  });

  it('limits the token header to the upstream origin', async () => {
    const http = await start(TOKEN);
    await lsRemote(runner, http.url('project.git'), { token: TOKEN });
    const env = spawned[0]!.env;
    const keys = Object.keys(env).filter((key) => key.startsWith('GIT_CONFIG_KEY_')).map((key) => env[key]);
    expect(keys).toContain(`http.http://127.0.0.1:${http.port}/.extraHeader`);
    expect(keys).not.toContain('http.extraHeader');
    // Without a prepared remote there is no token, and no network transport at all.
    const unprepared = runner.run(['ls-remote', '--end-of-options', http.url('project.git')]);
    await expect(unprepared).rejects.toThrow(/transport 'http' not allowed/);
    // A remote goes only with its own URL.
    const remote = await runner.prepareRemote(http.url('project.git'), { token: TOKEN });
    await expect(runner.run(['ls-remote', '--end-of-options', http.url('other.git')], { remote })).rejects.toThrow(/must follow --end-of-options/);
    // A token the caller says is not for this origin is never sent there.
    await expect(runner.prepareRemote(http.url('project.git'), { token: TOKEN, tokenAllowed: () => false })).rejects.toThrow(/not meant for 127\.0\.0\.1/);
  });

  it('fails clearly and without leaking when the token is wrong or missing', async () => {
    const http = await start(TOKEN);
    const wrong = testSecret('GIT_WRONG_TOKEN', 'ghs_');
    const error = await lsRemote(runner, http.url('project.git'), { token: wrong }).then(unexpected, (e: Error) => e);
    expect(error).toBeInstanceOf(GitCommandError);
    const text = `${error.message}\n${(error as GitCommandError).stderr}\n${(error as GitCommandError).command}`;
    expect(text).not.toContain(wrong);
    expect(text).not.toContain(Buffer.from(`x-access-token:${wrong}`).toString('base64'));
    expect(error.message).toMatch(/terminal prompts disabled|Authentication failed/);
    await expect(lsRemote(runner, http.url('project.git'))).rejects.toThrow(/terminal prompts disabled/);
  });

  it('proves a no-op sync does not fetch', async () => {
    const http = await start();
    const url = http.url('project.git');
    await syncMirror({ runner, storage, id: 1, name: 'project', url });
    http.requests.length = 0;
    expect((await syncMirror({ runner, storage, id: 1, name: 'project', url })).action).toBe('noop');
    // one in-process GET of the ref advertisement, no upload-pack negotiation
    expect(http.requests.map((r) => `${r.method} ${r.path}`)).toEqual(['GET /project.git/info/refs']);
    upstream.commit('new');
    upstream.publish();
    http.requests.length = 0;
    expect((await syncMirror({ runner, storage, id: 1, name: 'project', url })).action).toBe('fetched');
    expect(http.uploadPackPosts().length).toBeGreaterThanOrEqual(2);
  });

  it('maps an HTTP 404 to RemoteNotFoundError', async () => {
    const http = await start();
    await expect(lsRemote(runner, http.url('nope.git'))).rejects.toBeInstanceOf(RemoteNotFoundError);
    await expect(syncMirror({ runner, storage, id: 1, name: 'nope', url: http.url('nope.git') })).rejects.toThrow(
      /upstream repository http:\/\/127\.0\.0\.1:\d+\/nope\.git was not found/,
    );
  });

  it('aborts a running fetch and leaves no git process behind', async () => {
    const http = await start();
    const url = http.url('project.git');
    const first = await syncMirror({ runner, storage, id: 1, name: 'project', url });
    const before = await localRefs(runner, first.path);
    upstream.commit('pending');
    upstream.publish();
    const controller = new AbortController();
    let posts = 0;
    http.hold = (r) => r.method === 'POST' && ++posts >= 2; // let ls-remote through, hold the fetch
    http.onHold = () => setTimeout(() => controller.abort(new Error('lease lost')), 50);
    const error = await syncMirror({ runner, storage, id: 1, name: 'project', url, signal: controller.signal }).then(unexpected, (e: Error) => e);
    expect(error).toBeInstanceOf(GitAbortedError);
    expect(error.message).toMatch(/git --git-dir=.* fetch .*aborted: lease lost/);
    expect(processesFor(http.port)).toEqual([]);
    expect(await localRefs(runner, first.path)).toEqual(before);
    expect(readdirSync(storage).filter((entry) => entry.startsWith('.tmp-'))).toEqual([]);
  });

  it('aborts a running clone and removes its temp directory', async () => {
    const http = await start();
    const controller = new AbortController();
    let posts = 0;
    http.hold = (r) => r.method === 'POST' && ++posts >= 2;
    let cleanedMeanwhile: Promise<string[]> | undefined;
    let inProgress: string[] = [];
    http.onHold = () => {
      inProgress = readdirSync(storage);
      cleanedMeanwhile = cleanupTempDirs(storage).finally(() => controller.abort());
    };
    const url = http.url('project.git');
    const error = await syncMirror({ runner, storage, id: 1, name: 'project', url, signal: controller.signal }).then(unexpected, (e: Error) => e);
    expect(error).toBeInstanceOf(GitAbortedError);
    expect(inProgress).toHaveLength(1);
    expect(inProgress[0]).toMatch(/^\.tmp-/);
    expect(await cleanedMeanwhile).toEqual([]); // the clone in progress was left alone
    expect(processesFor(http.port)).toEqual([]);
    expect(readdirSync(storage)).toEqual([]);
  });

  it('times out a stalled command', async () => {
    const http = await start();
    http.hold = () => true;
    const impatient = new GitRunner({ protocols: new Set(['http']), defaultTimeoutMs: 800, egress: loopbackEgress() });
    const error = await lsRemote(impatient, http.url('project.git')).then(unexpected, (e: Error) => e);
    expect(error).toBeInstanceOf(GitTimeoutError);
    expect(error.message).toMatch(/did not finish within 800 ms/);
    expect(processesFor(http.port)).toEqual([]);
    expect(existsSync(storage)).toBe(false);
  });
});
