import { chownSync, mkdirSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { CredentialRedirectError } from '../../src/egress/errors.js';
import { GitAbortedError, GitCommandError, GitTimeoutError, InvalidRemoteUrlError, RemoteNotFoundError } from '../../src/git/errors.js';
import { syncMirror } from '../../src/git/mirror.js';
import { lsRemote, readRefFiles } from '../../src/git/refs.js';
import { listRemote } from '../../src/git/remote-refs.js';
import { GitRunner } from '../../src/git/runner.js';
import { git, refsOf, removeTempDirs, tempDir, Upstream } from '../support/git-fixtures.js';
import { GitHttpServer } from '../support/git-http-server.js';
import { countingRunner } from '../support/counting-runner.js';
import { loopbackEgress } from '../support/egress.js';
import { testSecret } from '../support/secrets.js';

/**
 * Lists `url` in-process (or not) and with `git ls-remote --symref`, expects both
 * to be deep-equal, and returns whether the in-process listing started git.
 */
async function compareWithGit(
  url: string,
  options: { protocols?: Set<string> } = {},
): Promise<{ usedGit: boolean; listing: Awaited<ReturnType<typeof lsRemote>> }> {
  const { runner, calls } = countingRunner(options.protocols);
  const listing = await listRemote(runner, url);
  const usedGit = calls.length > 0;
  expect(listing).toEqual(await lsRemote(runner, url));
  return { usedGit, listing };
}

/** An upstream with history on two branches, a lightweight and an annotated tag. */
function richUpstream(root = tempDir()): Upstream {
  const upstream = Upstream.create(root, 'project');
  upstream.commit('second');
  upstream.commit('topic work', 'topic');
  upstream.tag('v1');
  upstream.tag('v1-annotated', true);
  upstream.checkout('main');
  upstream.commit('third');
  upstream.publish();
  return upstream;
}

const servers: Array<GitHttpServer | Server> = [];

afterEach(async () => {
  for (const server of servers.splice(0)) {
    if (server instanceof GitHttpServer) await server.close();
    else await new Promise((resolve) => server.close(resolve));
  }
  vi.restoreAllMocks();
  vi.unstubAllEnvs();
  removeTempDirs();
});

describe('listRemote on a local upstream', () => {
  it('answers like git ls-remote from packed and loose refs of a bare repository, without a process', async () => {
    const upstream = richUpstream();
    let result = await compareWithGit(upstream.bare);
    expect(result.usedGit).toBe(false);
    expect(result.listing.head).toBe('refs/heads/main');
    expect(result.listing.refs.size).toBe(4);

    // Everything packed, then loose refs over packed ones, a new loose ref, a deleted packed ref.
    git(upstream.bare, 'pack-refs', '--all');
    upstream.commit('after packing');
    upstream.commit('more topic', 'topic');
    upstream.branch('fresh');
    upstream.deleteTag('v1');
    upstream.publish();
    git(upstream.bare, 'update-ref', 'refs/custom/note', upstream.refs().get('refs/heads/main')!);
    result = await compareWithGit(upstream.bare);
    expect(result.usedGit).toBe(false);
    expect(result.listing.refs.has('refs/tags/v1')).toBe(false);
    expect(result.listing.refs.get('refs/heads/topic')).toBe(upstream.refs().get('refs/heads/topic'));
    expect(result.listing.refs.has('refs/custom/note')).toBe(true);
    expect([...result.listing.refs.keys()].some((name) => name.endsWith('^{}'))).toBe(false);
  });

  it('reads a non-bare repository through its .git directory, by work tree path or .git path', async () => {
    const upstream = richUpstream();
    upstream.checkout('topic');
    for (const path of [upstream.work, join(upstream.work, '.git')]) {
      const result = await compareWithGit(path);
      expect(result.usedGit).toBe(false);
      expect(result.listing.head).toBe('refs/heads/topic');
    }
  });

  it('finds <path>.git the way git does', async () => {
    const upstream = richUpstream();
    const result = await compareWithGit(upstream.bare.slice(0, -'.git'.length));
    expect(result.usedGit).toBe(false);
    expect(result.listing.refs).toEqual(upstream.refs());
  });

  it('accepts file:// URLs, percent-decoded as git decodes them', async () => {
    const root = tempDir();
    const upstream = Upstream.create(root, 'café');
    const url = pathToFileURL(upstream.bare).href;
    expect(url).toContain('%C3%A9');
    const result = await compareWithGit(url);
    expect(result.usedGit).toBe(false);
    expect(result.listing.refs).toEqual(upstream.refs());
  });

  it('handles a detached HEAD, an unborn HEAD and an empty repository', async () => {
    const upstream = richUpstream();
    git(upstream.bare, 'update-ref', '--no-deref', 'HEAD', upstream.refs().get('refs/heads/topic')!);
    let result = await compareWithGit(upstream.bare);
    expect(result).toMatchObject({ usedGit: false, listing: { head: undefined } });

    git(upstream.bare, 'symbolic-ref', 'HEAD', 'refs/heads/not-yet');
    result = await compareWithGit(upstream.bare);
    expect(result).toMatchObject({ usedGit: false, listing: { head: undefined } });

    const empty = join(tempDir(), 'empty.git');
    git(tempDir(), 'init', '-q', '--bare', '-b', 'main', empty);
    result = await compareWithGit(empty);
    expect(result.usedGit).toBe(false);
    expect(result.listing).toEqual({ refs: new Map(), head: undefined });
  });

  it('lists a symbolic ref other than HEAD with its target id, and leaves chains and dangling ones to git', async () => {
    const upstream = richUpstream();
    git(upstream.bare, 'symbolic-ref', 'refs/heads/alias', 'refs/heads/topic');
    let result = await compareWithGit(upstream.bare);
    expect(result.usedGit).toBe(false);
    expect(result.listing.refs.get('refs/heads/alias')).toBe(upstream.refs().get('refs/heads/topic'));

    git(upstream.bare, 'symbolic-ref', 'HEAD', 'refs/heads/alias'); // HEAD → alias → topic
    result = await compareWithGit(upstream.bare);
    expect(result.usedGit).toBe(true);
    expect(result.listing.head).toBe('refs/heads/topic');

    git(upstream.bare, 'symbolic-ref', 'HEAD', 'refs/heads/main');
    git(upstream.bare, 'symbolic-ref', 'refs/heads/dangling', 'refs/heads/nowhere');
    result = await compareWithGit(upstream.bare);
    expect(result.usedGit).toBe(true);
    expect(result.listing.refs.has('refs/heads/dangling')).toBe(false);
  });

  it.each([
    ['uploadpack.hideRefs', (dir: string) => git(dir, 'config', 'uploadpack.hideRefs', 'refs/tags')],
    ['transfer.hideRefs', (dir: string) => git(dir, 'config', 'transfer.hideRefs', 'refs/heads/topic')],
    ['an include', (dir: string) => {
      writeFileSync(join(dir, 'extra.config'), '[uploadpack]\n\thiderefs = refs/heads\n');
      git(dir, 'config', 'include.path', 'extra.config');
    }],
    ['an extension', (dir: string) => {
      git(dir, 'config', 'core.repositoryformatversion', '1');
      git(dir, 'config', 'extensions.noop', 'true');
    }],
  ])('falls back to git when the config has %s, and answers what git answers', async (_label, configure) => {
    const upstream = richUpstream();
    configure(upstream.bare);
    const result = await compareWithGit(upstream.bare);
    expect(result.usedGit).toBe(true);
  });

  it('falls back to git for a sha256 repository', async () => {
    const dir = join(tempDir(), 'sha256.git');
    git(tempDir(), 'init', '-q', '--bare', '--object-format=sha256', dir);
    const result = await compareWithGit(dir);
    expect(result.usedGit).toBe(true);
  });

  it('falls back to git for a .git file (gitdir link) and for a ref whose object is missing', async () => {
    const upstream = richUpstream();
    const linked = join(tempDir(), 'linked');
    git(upstream.work, 'worktree', 'add', '-q', linked, 'topic');
    let result = await compareWithGit(linked);
    expect(result.usedGit).toBe(true);
    expect(result.listing.refs.has('refs/heads/topic')).toBe(true);

    git(upstream.bare, 'update-ref', 'refs/heads/ghost', upstream.refs().get('refs/heads/main')!);
    writeFileSync(join(upstream.bare, 'refs', 'heads', 'ghost'), `${'1'.repeat(40)}\n`);
    // Whether such a ref is advertised differs between git versions: git decides.
    result = await compareWithGit(upstream.bare);
    expect(result.usedGit).toBe(true);
  });

  it('leaves a repository owned by another user to git (dubious ownership)', async () => {
    if (process.geteuid?.() !== 0) return; // needs root to give the repository away
    const upstream = richUpstream();
    const { runner, calls } = countingRunner();
    chownSync(upstream.bare, 65534, 65534);
    const mine = await lsRemote(runner, upstream.bare).then(() => 'listed', (error: Error) => error.message);
    calls.length = 0;
    const ours = await listRemote(runner, upstream.bare).then(() => 'listed', (error: Error) => error.message);
    expect(calls.length).toBe(1);
    expect(ours).toBe(mine);
    expect(ours).toMatch(/safe\.directory/);
  });

  it('reports a missing upstream as RemoteNotFoundError, through git', async () => {
    const { runner } = countingRunner();
    const missing = join(tempDir(), 'no-such.git');
    await expect(listRemote(runner, missing)).rejects.toBeInstanceOf(RemoteNotFoundError);
    await expect(listRemote(runner, pathToFileURL(missing).href)).rejects.toBeInstanceOf(RemoteNotFoundError);
    mkdirSync(missing);
    await expect(listRemote(runner, missing)).rejects.toBeInstanceOf(RemoteNotFoundError);
  });

  it('reads nothing when the protocol allowlist refuses local repositories, and honours an aborted signal', async () => {
    const upstream = richUpstream();
    const { runner, calls } = countingRunner(new Set(['https']));
    await expect(listRemote(runner, upstream.bare)).rejects.toBeInstanceOf(InvalidRemoteUrlError);
    await expect(listRemote(runner, pathToFileURL(upstream.bare).href)).rejects.toBeInstanceOf(InvalidRemoteUrlError);
    expect(calls).toEqual([]);
    const local = countingRunner().runner;
    const controller = new AbortController();
    controller.abort(new Error('lease lost'));
    await expect(listRemote(local, upstream.bare, { signal: controller.signal })).rejects.toBeInstanceOf(GitAbortedError);
  });

  it('leaves a namespaced environment to git', async () => {
    const upstream = richUpstream();
    vi.stubEnv('GIT_NAMESPACE', 'team');
    const result = await compareWithGit(upstream.bare);
    expect(result.usedGit).toBe(true);
  });
});

describe('readRefFiles', () => {
  it('lists what git for-each-ref lists, symbolic refs included', () => {
    const upstream = richUpstream();
    git(upstream.bare, 'pack-refs', '--all');
    upstream.commit('loose again');
    upstream.publish();
    git(upstream.bare, 'symbolic-ref', 'refs/heads/alias', 'refs/heads/main');
    const symbolic = new Set<string>();
    expect(readRefFiles(upstream.bare, symbolic)).toEqual(refsOf(upstream.bare));
    expect([...symbolic]).toEqual(['refs/heads/alias']);
  });
});

describe('syncMirror with a local upstream', () => {
  it('starts no git process when nothing changed, only the fetch when something did', async () => {
    const upstream = richUpstream();
    const storage = join(tempDir(), 'mirrors');
    const { runner, calls } = countingRunner();
    const sync = () => syncMirror({ runner, storage, id: 1, name: 'project', url: upstream.bare });
    expect((await sync()).action).toBe('cloned');
    calls.length = 0;
    expect(await sync()).toMatchObject({ action: 'noop', verified: true });
    expect(calls).toEqual([]);

    upstream.commit('new');
    upstream.publish();
    expect(await sync()).toMatchObject({ action: 'fetched', verified: true, refsChanged: 1 });
    expect(calls.map((args) => args.find((arg) => !arg.startsWith('--git-dir=')))).toEqual(['fetch']);

    // Upstream gone: the missing-on-primary signal still comes through.
    renameSync(upstream.bare, `${upstream.bare}-moved`);
    await expect(sync()).rejects.toBeInstanceOf(RemoteNotFoundError);
    rmSync(`${upstream.bare}-moved`, { recursive: true, force: true });
  });
});

describe('listRemote over smart HTTP', () => {
  const http = new Set(['http']);
  const TOKEN = testSecret('GIT_TOKEN', 'ghs_');
  const AUTHORIZATION = `Basic ${Buffer.from(`x-access-token:${TOKEN}`).toString('base64')}`;

  async function serve(token?: string): Promise<{ server: GitHttpServer; upstream: Upstream }> {
    const root = tempDir();
    const upstream = richUpstream(root);
    const server = await GitHttpServer.start({ root, ...(token ? { token } : {}) });
    servers.push(server);
    return { server, upstream };
  }

  /** A server that answers every request with a redirect to `target` + the request path, rewritten by `rewrite`. */
  async function redirector(target: string, rewrite: (path: string) => string): Promise<{ url: string; hits: string[] }> {
    const hits: string[] = [];
    const server = createServer((req, res) => {
      hits.push(req.url ?? '');
      res.writeHead(302, { Location: `${target}${rewrite(req.url ?? '/')}` }).end();
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    servers.push(server);
    return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, hits };
  }

  it('reads the ref advertisement with one GET, token included, and answers like git', async () => {
    const { server, upstream } = await serve(TOKEN);
    git(upstream.bare, 'pack-refs', '--all');
    git(upstream.bare, 'symbolic-ref', 'refs/heads/alias', 'refs/heads/topic');
    const { runner, calls } = countingRunner(http);
    const listing = await listRemote(runner, server.url('project.git'), { token: TOKEN });
    expect(calls).toEqual([]);
    expect(server.requests.map((r) => `${r.method} ${r.path}?${r.query}`)).toEqual(['GET /project.git/info/refs?service=git-upload-pack']);
    expect(server.requests[0]!.headers.authorization).toBe(AUTHORIZATION);
    expect(server.requests[0]!.headers['git-protocol']).toBeUndefined();
    expect(listing.head).toBe('refs/heads/main');
    expect(listing).toEqual(await lsRemote(runner, server.url('project.git'), { token: TOKEN }));
  });

  it('answers like git for an empty repository, a detached HEAD and hidden refs', async () => {
    const { server, upstream } = await serve();
    const empty = join(upstream.bare, '..', 'empty.git');
    git(upstream.bare, 'init', '-q', '--bare', empty);
    expect(await compareWithGit(server.url('empty.git'), { protocols: http })).toMatchObject({
      usedGit: false,
      listing: { refs: new Map(), head: undefined },
    });
    git(upstream.bare, 'update-ref', '--no-deref', 'HEAD', upstream.refs().get('refs/heads/topic')!);
    git(upstream.bare, 'config', 'uploadpack.hideRefs', 'refs/tags');
    const result = await compareWithGit(server.url('project.git'), { protocols: http });
    expect(result.usedGit).toBe(false);
    expect(result.listing.head).toBeUndefined();
    expect([...result.listing.refs.keys()].some((name) => name.startsWith('refs/tags/'))).toBe(false);
  });

  it('leaves errors to git: 404 is RemoteNotFoundError, a wrong token fails without leaking', async () => {
    const { server } = await serve(TOKEN);
    const { runner, calls } = countingRunner(http);
    await expect(listRemote(runner, server.url('missing.git'), { token: TOKEN })).rejects.toBeInstanceOf(RemoteNotFoundError);
    expect(calls.length).toBe(1);
    const wrong = testSecret('GIT_WRONG_TOKEN', 'ghs_');
    const error = await listRemote(runner, server.url('project.git'), { token: wrong }).then(
      () => undefined,
      (e: Error) => e,
    );
    expect(error).toBeInstanceOf(GitCommandError);
    expect(`${error?.message} ${(error as GitCommandError).stderr}`).not.toContain(wrong);
  });

  it('follows a redirect like git and hands git the rebased URL; a token never follows it to another origin', async () => {
    const { server, upstream } = await serve();
    const moved = await redirector(`http://127.0.0.1:${server.port}`, (path) => path.replace('/moved.git/', '/project.git/'));
    const { runner, calls } = countingRunner(http);
    const remote = await runner.prepareRemote(`${moved.url}/moved.git`);
    expect(remote.url).toBe(`http://127.0.0.1:${server.port}/project.git`);
    const listing = await listRemote(runner, remote);
    expect(calls).toEqual([]);
    expect(listing.refs).toEqual(upstream.refs());
    expect(listing).toEqual(await lsRemote(runner, `${moved.url}/moved.git`));
    // git itself was given the target, not the redirector
    expect(calls.at(-1)).toEqual(['ls-remote', '--symref', '--end-of-options', `http://127.0.0.1:${server.port}/project.git`]);

    // With a token, the redirect to another origin is refused before anything is sent there.
    server.requests.length = 0;
    calls.length = 0;
    const error = await listRemote(runner, `${moved.url}/moved.git`, { token: TOKEN }).then(() => undefined, (e: Error) => e);
    expect(error).toBeInstanceOf(CredentialRedirectError);
    expect(error?.message).toContain(`${moved.url} redirects to http://127.0.0.1:${server.port}`);
    expect(server.requests).toEqual([]);
    expect(calls).toEqual([]);

    // A redirect that does not keep the `info/refs?service=…` tail is not followed: git, which
    // follows none, gets the URL as given and reports the redirect.
    const odd = await redirector(`http://127.0.0.1:${server.port}`, () => '/project.git/somewhere-else');
    calls.length = 0;
    const viaGit = await lsRemote(runner, `${odd.url}/odd.git`).then(String, (error: Error) => error.message);
    expect(viaGit).toMatch(/returned error: 302/);
    calls.length = 0;
    expect(await listRemote(runner, `${odd.url}/odd.git`).then(String, (error: Error) => error.message)).toBe(viaGit);
    expect(calls.length).toBe(1);
  });

  it('leaves the request to git when a proxy is in the environment', async () => {
    const { server } = await serve();
    vi.stubEnv('https_proxy', 'http://127.0.0.1:9'); // not used for http:// by git
    expect((await compareWithGit(server.url('project.git'), { protocols: http })).usedGit).toBe(true);
    vi.stubEnv('ALL_PROXY', 'http://127.0.0.1:9'); // used by git, which then cannot connect
    const { runner, calls } = countingRunner(http);
    await expect(listRemote(runner, server.url('project.git'))).rejects.toThrow(/unable to access/);
    expect(calls.length).toBe(1);
  });

  it('leaves https to git when a TLS setting is in the environment', async () => {
    vi.stubEnv('GIT_SSL_NO_VERIFY', '1');
    // Nothing listens there: git is run (and fails to connect) before any request is made in-process.
    const { runner, calls } = countingRunner(new Set(['https']));
    await expect(listRemote(runner, 'https://127.0.0.1:9/project.git')).rejects.toBeInstanceOf(GitCommandError);
    expect(calls.length).toBe(1);
  });

  it('honours the runner timeout and the abort signal, without leaking the token', async () => {
    const { server } = await serve(TOKEN);
    server.hold = () => true;
    const impatient = new GitRunner({ protocols: http, defaultTimeoutMs: 300, egress: loopbackEgress() });
    const timedOut = await listRemote(impatient, server.url('project.git'), { token: TOKEN }).then(() => undefined, (e: Error) => e);
    expect(timedOut).toBeInstanceOf(GitTimeoutError);
    expect(timedOut?.message).toMatch(/did not finish within 300 ms/);
    expect(timedOut?.message).not.toContain(TOKEN);

    const controller = new AbortController();
    server.onHold = () => setTimeout(() => controller.abort(new Error('lease lost')), 20);
    const { runner, calls } = countingRunner(http);
    const aborted = await listRemote(runner, server.url('project.git'), { token: TOKEN, signal: controller.signal }).then(
      () => undefined,
      (e: Error) => e,
    );
    expect(aborted).toBeInstanceOf(GitAbortedError);
    expect(aborted?.message).toMatch(/aborted: lease lost/);
    expect(calls).toEqual([]);
  });

  it('makes a no-op sync one GET and no process', async () => {
    const { server, upstream } = await serve(TOKEN);
    const storage = join(tempDir(), 'mirrors');
    const { runner, calls } = countingRunner(http);
    const sync = () => syncMirror({ runner, storage, id: 1, name: 'project', url: server.url('project.git'), token: TOKEN });
    expect((await sync()).action).toBe('cloned');
    server.requests.length = 0;
    calls.length = 0;
    expect(await sync()).toMatchObject({ action: 'noop', verified: true });
    expect(calls).toEqual([]);
    expect(server.requests.map((r) => `${r.method} ${r.path}`)).toEqual(['GET /project.git/info/refs']);
    upstream.commit('new');
    upstream.publish();
    expect(await sync()).toMatchObject({ action: 'fetched', verified: true });
  });
});
