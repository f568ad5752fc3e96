import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { EgressRefusedError } from '../../src/egress/errors.js';
import { InvalidGitOptionError } from '../../src/git/errors.js';
import { localRefs, syncMirror } from '../../src/git/mirror.js';
import { listRemote } from '../../src/git/remote-refs.js';
import { GitRunner } from '../../src/git/runner.js';
import { loopbackEgress } from '../support/egress.js';
import { removeTempDirs, tempDir, Upstream } from '../support/git-fixtures.js';
import { GitHttpServer } from '../support/git-http-server.js';

const spawned = vi.hoisted(() => [] as Array<{ args: string[]; env: Record<string, string> }>);
vi.mock('node:child_process', async (importOriginal) => {
  const actual = await importOriginal<typeof import('node:child_process')>();
  const spawn = (file: string, args: string[], options: { env: Record<string, string> }) => {
    if (args[0] !== 'http-backend') spawned.push({ args: [file, ...args], env: options.env });
    return (actual.spawn as (...a: unknown[]) => unknown)(file, args, options);
  };
  return { ...actual, spawn };
});

/** The GIT_CONFIG_* pairs of an environment, multi-valued keys in order. */
function configOf(env: Record<string, string>): Array<[string, string]> {
  return Array.from({ length: Number(env.GIT_CONFIG_COUNT) }, (_, i) => [env[`GIT_CONFIG_KEY_${i}`]!, env[`GIT_CONFIG_VALUE_${i}`]!]);
}

/** A name of the test's own (unknown to the system resolver) that resolves to 127.0.0.1. */
const NAME = 'git.forgesync.test';
const lookup = async (host: string) => {
  if (host !== NAME) throw Object.assign(new Error('not found'), { code: 'ENOTFOUND' });
  return [{ address: '127.0.0.1', family: 4 as const }];
};

let server: GitHttpServer | undefined;
const others: Server[] = [];
let root: string;
let upstream: Upstream;

beforeEach(async () => {
  spawned.length = 0;
  root = tempDir();
  upstream = Upstream.create(root, 'project');
  server = await GitHttpServer.start({ root });
});
afterEach(async () => {
  await server?.close();
  for (const other of others.splice(0)) await new Promise((resolve) => other.close(resolve));
  vi.unstubAllEnvs();
  removeTempDirs();
});

describe('pinning', () => {
  it('connects git and the in-process reader to the checked address of a name (http.curloptResolve)', async () => {
    const runner = new GitRunner({ protocols: new Set(['http']), egress: loopbackEgress(lookup) });
    const url = `http://${NAME}:${server!.port}/project.git`;
    const storage = join(root, 'mirrors');
    // The system resolver knows no such name: only the pins make these work.
    const result = await syncMirror({ runner, storage, id: 1, name: 'project', url });
    expect(result).toMatchObject({ action: 'cloned', verified: true });
    expect(await localRefs(runner, result.path)).toEqual(upstream.refs());
    const clone = spawned.find(({ args }) => args.includes('clone'))!;
    expect(configOf(clone.env)).toContainEqual(['http.curloptResolve', `${NAME}:${server!.port}:127.0.0.1`]);
    expect(configOf(clone.env)).toContainEqual(['http.followRedirects', 'false']);
    expect(clone.env.GIT_ALLOW_PROTOCOL).toBe('http');
    expect(server!.requests.length).toBeGreaterThan(1);
    expect(server!.requests.every((request) => request.headers.host === `${NAME}:${server!.port}`)).toBe(true);

    // A no-op sync: the in-process GET alone, pinned the same way.
    spawned.length = 0;
    server!.requests.length = 0;
    expect((await syncMirror({ runner, storage, id: 1, name: 'project', url })).action).toBe('noop');
    expect(spawned).toEqual([]);
    expect(server!.requests.map((request) => `${request.method} ${request.headers.host}`)).toEqual([`GET ${NAME}:${server!.port}`]);
  });

  it('looks nothing up for a local upstream', async () => {
    let looked = 0;
    const runner = new GitRunner({ protocols: new Set(['file']), egress: loopbackEgress(async (host) => (looked++, lookup(host))) });
    const remote = await runner.prepareRemote(upstream.bare);
    expect(remote).toMatchObject({ protocol: 'file', target: undefined, url: upstream.bare });
    await listRemote(runner, remote);
    expect(looked).toBe(0);
  });
});

describe('no git network call bypasses the policy', () => {
  it('gives git no network transport without a prepared remote', async () => {
    const runner = new GitRunner({ protocols: new Set(['http', 'https', 'ssh', 'git', 'file']), egress: loopbackEgress() });
    await expect(runner.run(['ls-remote', '--end-of-options', server!.url('project.git')])).rejects.toThrow(/transport 'http' not allowed/);
    await expect(runner.run(['clone', '--end-of-options', server!.url('project.git'), join(root, 'c')])).rejects.toThrow(/transport 'http' not allowed/);
    expect(server!.requests).toEqual([]);
    expect(spawned.map(({ env }) => env.GIT_ALLOW_PROTOCOL)).toEqual(['file', 'file']);
  });

  it('takes only remotes this runner prepared, for the URL they were prepared for, unaltered', async () => {
    const runner = new GitRunner({ protocols: new Set(['http']), egress: loopbackEgress() });
    const other = new GitRunner({ protocols: new Set(['http']), egress: loopbackEgress() });
    const remote = await runner.prepareRemote(server!.url('project.git'));
    await expect(other.run(['ls-remote', '--end-of-options', remote.url], { remote })).rejects.toThrow(/not prepared by this runner/);
    await expect(runner.run(['ls-remote', '--end-of-options', { ...remote }.url], { remote: { ...remote } })).rejects.toBeInstanceOf(InvalidGitOptionError);
    await expect(runner.run(['ls-remote', '--end-of-options', `http://127.0.0.2:${server!.port}/project.git`], { remote })).rejects.toThrow(
      /must follow --end-of-options/,
    );
    await expect(runner.run(['-c', 'http.followRedirects=true', 'ls-remote', '--end-of-options', remote.url], { remote })).rejects.toThrow(/no -c/);
    expect(() => Object.assign(remote, { url: 'http://10.0.0.1/x.git' })).toThrow(TypeError);
    expect(spawned).toEqual([]);
    // …and the genuine article works.
    await expect(runner.run(['ls-remote', '--end-of-options', remote.url], { remote })).resolves.toMatchObject({ stdout: expect.stringContaining('refs/heads/main') });
  });

  it('refuses a default-policy runner any loopback upstream, before a process or a request', async () => {
    const runner = new GitRunner({ protocols: new Set(['http']) });
    const error = await syncMirror({ runner, storage: join(root, 'm'), id: 1, name: 'p', url: server!.url('project.git') }).then(
      () => undefined,
      (e: Error) => e,
    );
    expect(error).toBeInstanceOf(EgressRefusedError);
    expect(spawned).toEqual([]);
    expect(server!.requests).toEqual([]);
  });
});

describe('with a proxy in the environment', () => {
  it('still checks the target and sends nothing itself; git gets the URL as given, pinned, following no redirect', async () => {
    const proxied: string[] = [];
    const proxy = createServer((req, res) => {
      proxied.push(String(req.url));
      res.writeHead(502).end();
    });
    await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
    others.push(proxy);
    vi.stubEnv('http_proxy', `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`);
    const runner = new GitRunner({ protocols: new Set(['http']), egress: loopbackEgress(lookup) });
    await expect(runner.prepareRemote('http://10.0.0.1/project.git')).rejects.toThrow(/refusing to connect to 10\.0\.0\.1/);
    await expect(runner.prepareRemote('http://localhost.example.invalid/project.git')).rejects.toThrow(/cannot resolve/);
    const remote = await runner.prepareRemote(`http://${NAME}:${server!.port}/project.git`);
    expect(remote).toMatchObject({ url: `http://${NAME}:${server!.port}/project.git`, listing: undefined });
    expect(proxied).toEqual([]);
    expect(server!.requests).toEqual([]);
    // git goes through the proxy (the operator's choice), with the pin and no redirects.
    await expect(listRemote(runner, remote)).rejects.toThrow(/unable to access/);
    expect(proxied).toEqual([`http://${NAME}:${server!.port}/project.git/info/refs?service=git-upload-pack`]);
    expect(configOf(spawned.at(-1)!.env)).toEqual(
      expect.arrayContaining([
        ['http.followRedirects', 'false'],
        ['http.curloptResolve', `${NAME}:${server!.port}:127.0.0.1`],
      ]),
    );
  });
});
