import { chmodSync, existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { makeRedactor } from '../../src/git/env.js';
import {
  GitAbortedError,
  GitCommandError,
  GitError,
  GitOutputLimitError,
  GitTimeoutError,
  InvalidGitOptionError,
  InvalidRemoteUrlError,
} from '../../src/git/errors.js';
import { lsRemote, syncMirror } from '../../src/git/mirror.js';
import { LineSplitter } from '../../src/git/output.js';
import { groupRunning } from '../../src/git/process-group.js';
import { GitRunner } from '../../src/git/runner.js';
import { KNOWN_PROTOCOLS } from '../../src/git/url.js';
import { loopbackEgress } from '../support/egress.js';
import { removeTempDirs, tempDir, Upstream } from '../support/git-fixtures.js';
import { testSecret } from '../support/secrets.js';

const spawned = vi.hoisted(
  () => [] as Array<{ file: string; args: string[]; options: Record<string, unknown>; pid: number | undefined }>,
);
vi.mock('node:child_process', async (importOriginal) => {
  const actual = await importOriginal<typeof import('node:child_process')>();
  const spawn = (file: string, args: string[], options: Record<string, unknown>) => {
    const child = (actual.spawn as (...a: unknown[]) => { pid?: number })(file, args, options);
    spawned.push({ file, args, options, pid: child.pid });
    return child;
  };
  return { ...actual, spawn };
});


beforeEach(() => {
  spawned.length = 0;
});
afterEach(() => {
  removeTempDirs();
  vi.unstubAllEnvs();
});

describe('GitRunner', () => {
  it('spawns git detached, without a shell, with an environment built from scratch', async () => {
    vi.stubEnv('FORGESYNC_TEST_SECRET', 'do-not-leak');
    vi.stubEnv('GIT_CONFIG_PARAMETERS', "'core.hookspath'='/tmp/evil'");
    vi.stubEnv('SSH_AUTH_SOCK', '/tmp/agent.sock');
    const runner = new GitRunner({ protocols: new Set(['https', 'ssh']) });
    await runner.run(['--version']);
    expect(spawned).toHaveLength(1);
    const { file, args, options } = spawned[0]!;
    expect([file, args, options.shell, options.detached]).toEqual(['git', ['--version'], false, true]);
    const env = options.env as Record<string, string>;
    expect(env.FORGESYNC_TEST_SECRET).toBeUndefined();
    expect(env.GIT_CONFIG_PARAMETERS).toBeUndefined();
    expect(env).toMatchObject({
      HOME: '/nonexistent',
      LANG: 'C',
      GIT_TERMINAL_PROMPT: '0',
      GIT_CONFIG_NOSYSTEM: '1',
      GIT_CONFIG_GLOBAL: '/dev/null',
      GIT_PROTOCOL_FROM_USER: '0',
      // No prepared remote: no network transport (see the egress tests).
      GIT_ALLOW_PROTOCOL: '',
    });
    expect(env.GIT_SSH_COMMAND).toMatch(/^ssh -F \/dev\/null -o BatchMode=yes /);
    expect(env.SSH_ASKPASS).toBeUndefined();
    expect(env.SSH_AUTH_SOCK).toBeUndefined();
    const config = Object.fromEntries(
      Array.from({ length: Number(env.GIT_CONFIG_COUNT) }, (_, i) => [env[`GIT_CONFIG_KEY_${i}`], env[`GIT_CONFIG_VALUE_${i}`]]),
    );
    expect(config).toMatchObject({
      'core.hooksPath': '/dev/null',
      'credential.helper': '',
      'protocol.allow': 'never',
      'http.followRedirects': 'false',
    });
    expect(config['protocol.https.allow']).toBeUndefined();
    expect(config['protocol.file.allow']).toBeUndefined();
    expect(config['http.extraHeader']).toBeUndefined();
  });

  it('ignores configuration smuggled through the parent environment', async () => {
    const marker = join(tempDir(), 'pwned');
    vi.stubEnv('GIT_CONFIG_COUNT', '1');
    vi.stubEnv('GIT_CONFIG_KEY_0', 'alias.pwn');
    vi.stubEnv('GIT_CONFIG_VALUE_0', `!touch ${marker}`);
    const runner = new GitRunner({ protocols: new Set(['https']) });
    await expect(runner.run(['pwn'])).rejects.toThrow(/'pwn' is not a git command/);
    expect(existsSync(marker)).toBe(false);
  });

  it('lets git itself refuse disallowed transports and remote helpers', async () => {
    const root = tempDir();
    const upstream = Upstream.create(root);
    const marker = join(root, 'pwned');
    const runner = new GitRunner({ protocols: new Set(['https']) });
    await expect(runner.run(['ls-remote', '--end-of-options', upstream.bare])).rejects.toThrow(/transport 'file' not allowed/);
    const permissive = new GitRunner({ protocols: KNOWN_PROTOCOLS });
    await expect(permissive.run(['ls-remote', '--end-of-options', `ext::sh -c touch% ${marker}`])).rejects.toThrow(
      /transport 'ext' not allowed/,
    );
    expect(existsSync(marker)).toBe(false);
  });

  it.each([
    ['-uhttps://example.com/x', ['https']],
    ['--upload-pack=touch /tmp/forgesync-x', ['https', 'file']],
    ['--upload-pack=touch', ['https', 'file']],
    ['ext::sh -c touch% /tmp/forgesync-pwned', ['https', 'ssh', 'http', 'git', 'file']],
    ['fd::3', ['https', 'ssh', 'http', 'git', 'file']],
    ['file:///srv/repo.git', ['https', 'ssh']],
    ['/srv/repo.git', ['https', 'ssh']],
    ['http://example.com/repo.git', ['https', 'ssh']],
    ['https://user:pass@example.com/repo.git', ['https']],
    ['ssh://-oProxyCommand=touch%20x/r', ['ssh']],
  ])('rejects %j before any process is spawned', async (url, protocols) => {
    const runner = new GitRunner({ protocols: new Set(protocols) });
    const storage = tempDir();
    await expect(syncMirror({ runner, storage, id: 1, name: 'x', url })).rejects.toBeInstanceOf(InvalidRemoteUrlError);
    await expect(lsRemote(runner, url)).rejects.toBeInstanceOf(InvalidRemoteUrlError);
    expect(spawned).toEqual([]);
  });

  it('refuses a token in argv or with a newline', async () => {
    const runner = new GitRunner({ protocols: new Set(['http']), egress: loopbackEgress() });
    // Nothing listens on port 9: the in-process request fails, the remote stays as given.
    const token = testSecret('RUNNER_ARGV_TOKEN');
    const remote = await runner.prepareRemote('http://127.0.0.1:9/x.git', { token });
    await expect(runner.run(['ls-remote', '--end-of-options', remote.url, token], { remote })).rejects.toBeInstanceOf(
      InvalidGitOptionError,
    );
    await expect(runner.prepareRemote('http://127.0.0.1:9/x.git', { token: 'abc\r\nX-Evil: 1' })).rejects.toBeInstanceOf(InvalidGitOptionError);
    expect(spawned).toEqual([]);
  });

  it('reports a failing command with its exit code and stderr tail', async () => {
    const runner = new GitRunner({ protocols: new Set(['file']) });
    const error = await runner.run(['--git-dir=/nonexistent/repo.git', 'rev-parse', 'HEAD']).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(GitCommandError);
    expect(error).toMatchObject({ exitCode: 128, command: 'git --git-dir=/nonexistent/repo.git rev-parse HEAD' });
    expect((error as Error).message).toMatch(/exit code 128: .*not a git repository/);
  });

  it('kills the whole process group on timeout', async () => {
    const runner = new GitRunner({ protocols: new Set(['https']), gitBinary: '/bin/sh', defaultTimeoutMs: 300 });
    const started = Date.now();
    const error = await runner.run(['-c', 'sleep 30 & sleep 30 & wait']).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(GitTimeoutError);
    expect(Date.now() - started).toBeLessThan(5_000);
    expect(groupRunning(spawned[0]!.pid!)).toBe(false);
  });

  it('kills the whole process group on abort and leaves nothing running', async () => {
    const runner = new GitRunner({ protocols: new Set(['https']), gitBinary: '/bin/sh' });
    const controller = new AbortController();
    const lines: string[] = [];
    const running = runner.run(['-c', 'echo started >&2; sleep 30 & sleep 30 & wait'], {
      signal: controller.signal,
      onStderrLine: (line) => {
        lines.push(line);
        controller.abort(new Error('lease lost'));
      },
    });
    const error = await running.catch((e: unknown) => e);
    expect(error).toBeInstanceOf(GitAbortedError);
    expect((error as Error).message).toMatch(/aborted: lease lost/);
    expect(lines).toEqual(['started']);
    expect(groupRunning(spawned[0]!.pid!)).toBe(false);
    const { execFileSync } = await vi.importActual<typeof import('node:child_process')>('node:child_process');
    // Only this run's group (killed ones not yet reaped show as <defunct>): a `sleep 30…` elsewhere is not this test's business.
    const pgid = String(spawned[0]!.pid!);
    const leftover = execFileSync('ps', ['-eo', 'pgid,args'], { encoding: 'utf8' })
      .split('\n')
      .filter((line) => line.trim().split(/\s+/)[0] === pgid && !line.includes('<defunct>'));
    expect(leftover).toEqual([]);
  });

  it('rejects at once when the signal has already fired', async () => {
    const runner = new GitRunner({ protocols: new Set(['https']) });
    await expect(runner.run(['--version'], { signal: AbortSignal.abort() })).rejects.toBeInstanceOf(GitAbortedError);
    expect(spawned).toEqual([]);
  });

  it('caps stdout', async () => {
    const runner = new GitRunner({ protocols: new Set(['https']), maxStdoutBytes: 5 });
    await expect(runner.run(['--version'])).rejects.toBeInstanceOf(GitOutputLimitError);
  });

  it('reports a missing git binary clearly', async () => {
    const runner = new GitRunner({ protocols: new Set(['https']), gitBinary: '/nonexistent/git' });
    await expect(runner.run(['--version'])).rejects.toThrow(GitError);
    await expect(runner.run(['--version'])).rejects.toThrow(/could not run \/nonexistent\/git/);
  });

  it('never runs hooks of the repository it works in', async () => {
    const root = tempDir();
    const upstream = Upstream.create(root);
    const runner = new GitRunner({ protocols: new Set(['file']) });
    const storage = join(root, 'mirrors');
    const first = await syncMirror({ runner, storage, id: 1, name: 'p', url: upstream.bare });
    const marker = join(root, 'hook-ran');
    const hook = join(first.path, 'hooks', 'reference-transaction');
    mkdirSync(join(first.path, 'hooks'), { recursive: true });
    writeFileSync(hook, `#!/bin/sh\ntouch ${marker}\n`);
    chmodSync(hook, 0o755);
    upstream.commit('more');
    upstream.publish();
    expect((await syncMirror({ runner, storage, id: 1, name: 'p', url: upstream.bare })).action).toBe('fetched');
    expect(existsSync(marker)).toBe(false);
  });
});

describe('redaction and progress', () => {
  it('scrubs tokens, Authorization headers and URL passwords', () => {
    const redact = makeRedactor('tok_12345');
    const header = Buffer.from('x-access-token:tok_12345').toString('base64');
    const text = `fatal: tok_12345 ${header}\n> Authorization: Basic ${header}\nhttps://u:pw@host/x`;
    const out = redact(text);
    expect(out).not.toContain('tok_12345');
    expect(out).not.toContain(header);
    expect(out).not.toContain('pw@');
    expect(out).toContain('Authorization: ***');
    expect(out).toContain('https://u:***@host/x');
  });

  it('splits progress on \\r and \\n across chunks', () => {
    const lines: string[] = [];
    const splitter = new LineSplitter((line) => lines.push(line));
    for (const chunk of ['Receiving objects:  10%\rReceiving', ' objects: 100%\r\n', 'done\n', 'tail']) splitter.push(chunk);
    splitter.end();
    expect(lines).toEqual(['Receiving objects:  10%', 'Receiving objects: 100%', 'done', 'tail']);
  });
});
