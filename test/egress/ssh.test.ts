import { execFileSync } from 'node:child_process';
import { chmodSync, lstatSync, mkdirSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { EgressRefusedError } from '../../src/egress/errors.js';
import { GitCommandError } from '../../src/git/errors.js';
import { GitRunner } from '../../src/git/runner.js';
import { loopbackEgress } from '../support/egress.js';
import { removeTempDirs, tempDir } from '../support/git-fixtures.js';

const spawned = vi.hoisted(() => [] as Array<{ args: string[]; env: Record<string, string> }>);
vi.mock('node:child_process', async (importOriginal) => {
  const actual = await importOriginal<typeof import('node:child_process')>();
  const spawn = (file: string, args: string[], options: { env: Record<string, string> }) => {
    spawned.push({ args: [file, ...args], env: options.env });
    return (actual.spawn as (...a: unknown[]) => unknown)(file, args, options);
  };
  return { ...actual, spawn };
});

const NAME = 'git.forgesync.test';
const lookup = async (host: string) => {
  if (host !== NAME) throw Object.assign(new Error('not found'), { code: 'ENOTFOUND' });
  return [{ address: '127.0.0.1', family: 4 as const }];
};

/** A port on 127.0.0.1 where nothing listens. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/** What ssh makes of a GIT_SSH_COMMAND for `destination` (`ssh -G`: the configuration after evaluation, no connection), as git runs it: through sh. */
function effectiveSsh(command: string, port: number, destination: string): Map<string, string[]> {
  const out = execFileSync('sh', ['-c', `${command} -G -p ${port} ${destination}`], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] });
  const options = new Map<string, string[]>();
  for (const line of out.split('\n')) {
    const space = line.indexOf(' ');
    if (space > 0) options.set(line.slice(0, space), [...(options.get(line.slice(0, space)) ?? []), line.slice(space + 1)]);
  }
  return options;
}

let dataDir: string;
beforeEach(() => {
  spawned.length = 0;
  dataDir = join(tempDir(), 'data dir'); // a space: every path must survive the shell
  vi.stubEnv('SSH_AUTH_SOCK', '/tmp/forgesync-test-agent.sock');
});
afterEach(() => {
  vi.unstubAllEnvs();
  removeTempDirs();
});

describe('ssh', () => {
  it("runs with forgesync's own known_hosts, no user configuration, no default keys, no agent, pinned to the checked address", async () => {
    const runner = new GitRunner({ protocols: new Set(['ssh']), egress: loopbackEgress(lookup), dataDir });
    const port = await closedPort();
    const remote = await runner.prepareRemote(`ssh://git@${NAME}:${port}/project.git`);
    const knownHosts = join(dataDir, 'ssh', 'known_hosts');
    expect(statSync(knownHosts).mode & 0o777).toBe(0o600);
    expect(statSync(join(dataDir, 'ssh')).mode & 0o777).toBe(0o700);

    const error = await runner.run(['ls-remote', '--end-of-options', remote.url], { remote }).then(() => undefined, (e: Error) => e);
    expect(error).toBeInstanceOf(GitCommandError);
    // The name is unknown to the system resolver: ssh went to the pinned address.
    expect((error as GitCommandError).stderr).toMatch(new RegExp(`connect to host 127\\.0\\.0\\.1 port ${port}: Connection refused`));
    expect((error as GitCommandError).stderr).not.toMatch(/Could not resolve/);

    const { env } = spawned.at(-1)!;
    expect(env.GIT_ALLOW_PROTOCOL).toBe('ssh');
    expect(env.SSH_AUTH_SOCK).toBeUndefined();
    expect(env.GIT_SSH_COMMAND).toMatch(/^ssh -F \/dev\/null /);
    const ssh = effectiveSsh(env.GIT_SSH_COMMAND!, port, `git@${NAME}`);
    expect(ssh.get('hostname')).toEqual(['127.0.0.1']);
    expect(ssh.get('hostkeyalias')).toEqual([`[${NAME}]:${port}`]);
    expect(ssh.get('userknownhostsfile')).toEqual([knownHosts]);
    expect(ssh.get('globalknownhostsfile')).toEqual(['/dev/null']);
    expect(ssh.get('stricthostkeychecking')).toEqual(['accept-new']);
    expect(ssh.get('identityfile')).toEqual(['none']); // not ~/.ssh/id_*
    expect(ssh.get('identitiesonly')).toEqual(['yes']);
    expect(ssh.get('identityagent')).toEqual(['none']);
    expect(ssh.get('batchmode')).toEqual(['yes']);
    expect(env.GIT_SSH_COMMAND).not.toContain('~');
  });

  it('offers the configured key only, and the agent only when allowed', async () => {
    const key = join(dataDir, 'keys', 'deploy key');
    const withKey = new GitRunner({ protocols: new Set(['ssh']), egress: loopbackEgress(lookup), dataDir, sshKeyFile: key, sshAgent: true });
    const remote = await withKey.prepareRemote(`git@${NAME}:project.git`);
    await withKey.run(['ls-remote', '--end-of-options', remote.url], { remote, timeoutMs: 5_000 }).catch(() => undefined);
    let { env } = spawned.at(-1)!;
    expect(env.SSH_AUTH_SOCK).toBe('/tmp/forgesync-test-agent.sock');
    let ssh = effectiveSsh(env.GIT_SSH_COMMAND!, 22, `git@${NAME}`);
    expect(ssh.get('identityfile')).toEqual([key]);
    expect(ssh.get('identitiesonly')).toEqual(['yes']);
    expect(ssh.get('identityagent')).not.toEqual(['none']);
    expect(ssh.get('hostkeyalias')).toEqual([NAME]);

    // The agent alone: its keys are the identities, so IdentitiesOnly must not filter them out.
    const agentOnly = new GitRunner({ protocols: new Set(['ssh']), egress: loopbackEgress(lookup), dataDir, sshAgent: true });
    const again = await agentOnly.prepareRemote(`git@${NAME}:project.git`);
    await agentOnly.run(['ls-remote', '--end-of-options', again.url], { remote: again, timeoutMs: 5_000 }).catch(() => undefined);
    ({ env } = spawned.at(-1)!);
    ssh = effectiveSsh(env.GIT_SSH_COMMAND!, 22, `git@${NAME}`);
    expect(ssh.get('identityfile')).toEqual(['none']);
    expect(ssh.get('identitiesonly')).toEqual(['no']);

    // A path ssh would expand (`%d`: the user's home) is refused, not passed on.
    const tokens = new GitRunner({ protocols: new Set(['ssh']), egress: loopbackEgress(lookup), dataDir, sshKeyFile: '/srv/%d/.ssh/id_ed25519' });
    await expect(tokens.prepareRemote(`git@${NAME}:project.git`)).rejects.toThrow(/ssh would expand or split/);
  });

  it('refuses a refused address (however spelled) before ssh runs, and ssh without a data directory', async () => {
    const runner = new GitRunner({ protocols: new Set(['ssh']), dataDir });
    for (const url of ['ssh://git@127.0.0.1/x.git', 'ssh://git@0x7f000001/x.git', 'git@[::1]:x.git', 'ssh://git@%31%32%37.0.0.1/x.git', `git@${'localhost'}:x.git`]) {
      await expect(runner.prepareRemote(url), url).rejects.toBeInstanceOf(EgressRefusedError);
    }
    await expect(new GitRunner({ protocols: new Set(['ssh']), egress: loopbackEgress(lookup) }).prepareRemote(`git@${NAME}:x.git`)).rejects.toThrow(
      /ssh upstreams need forgesync's own known_hosts/,
    );
    expect(spawned).toEqual([]);
  });

  it('tightens a known_hosts file others could read, and refuses a symlink there', async () => {
    mkdirSync(join(dataDir, 'ssh'), { recursive: true });
    const knownHosts = join(dataDir, 'ssh', 'known_hosts');
    writeFileSync(knownHosts, '');
    chmodSync(knownHosts, 0o644);
    await new GitRunner({ protocols: new Set(['ssh']), egress: loopbackEgress(lookup), dataDir }).prepareRemote(`git@${NAME}:x.git`);
    expect(statSync(knownHosts).mode & 0o777).toBe(0o600);

    const elsewhere = join(tempDir(), 'data');
    mkdirSync(join(elsewhere, 'ssh'), { recursive: true });
    symlinkSync(knownHosts, join(elsewhere, 'ssh', 'known_hosts'));
    expect(lstatSync(join(elsewhere, 'ssh', 'known_hosts')).isSymbolicLink()).toBe(true);
    const linked = new GitRunner({ protocols: new Set(['ssh']), egress: loopbackEgress(lookup), dataDir: elsewhere });
    await expect(linked.prepareRemote(`git@${NAME}:x.git`)).rejects.toThrow(/ELOOP|symbolic|not a regular file/);
  });
});
