import { execFileSync } from 'node:child_process';
import { chmodSync, mkdtempSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { CredentialUnavailableError, InvalidCredentialRefError } from '../../src/credentials/errors.js';
import { CredentialStore, validateCredentialName } from '../../src/credentials/store.js';
import { createLogger } from '../../src/logging/logger.js';
import { CapturedLogs } from '../replication/harness.js';
import { testSecret } from '../support/secrets.js';

const TOKEN = testSecret('STORE_TOKEN', 'ghp_');

function store(secretsFile: string | undefined, env: NodeJS.ProcessEnv = {}) {
  const logs = new CapturedLogs();
  return { logs, credentials: new CredentialStore({ secretsFile, env, logger: createLogger({ level: 'warn', destination: logs }) }) };
}

function secretsFile(content: unknown): string {
  const file = join(mkdtempSync(join(tmpdir(), 'forgesync-secrets-')), 'secrets.json');
  writeFileSync(file, typeof content === 'string' ? content : JSON.stringify(content));
  return file;
}

const message = (promise: Promise<unknown>) => promise.then(() => 'resolved', (error: Error) => `${error.name}: ${error.message}`);

describe('credentials: named by the operator, bound to hosts', () => {
  it('hands a token out only for the hosts it is bound to, from the secrets file or the environment', async () => {
    const file = secretsFile({ github_bot: { token: TOKEN, hosts: ['github.com', 'ghe.example.com:8443'] } });
    const { credentials } = store(file, { FORGESYNC_CREDENTIAL_CI: `${TOKEN}-ci`, FORGESYNC_CREDENTIAL_CI_HOSTS: 'git.example.org, 10.0.0.5:3000' });
    const bound = await credentials.tokenFor('GitHub_Bot', 'https://github.com/o/r.git');
    expect(bound.token).toBe(TOKEN);
    expect(bound.allows(new URL('https://github.com/other/x'))).toBe(true);
    expect(bound.allows(new URL('https://api.github.com/'))).toBe(false);
    expect(bound.allows(new URL('https://github.com:8443/'))).toBe(false);
    expect((await credentials.tokenFor('github_bot', 'https://ghe.example.com:8443/o/r.git')).token).toBe(TOKEN);
    expect((await credentials.tokenFor('github_bot', 'git@github.com:o/r.git')).token).toBe(TOKEN);
    expect((await credentials.tokenFor('ci', 'https://git.example.org/x.git')).token).toBe(`${TOKEN}-ci`);
    expect((await credentials.tokenFor('ci', 'http://10.0.0.5:3000/x.git')).token).toBe(`${TOKEN}-ci`);
    for (const url of ['https://attacker.example/x.git', 'https://ghe.example.com/o/r.git', 'https://github.com.attacker.example/x', 'https://git.example.org:8443/x']) {
      await expect(credentials.tokenFor('github_bot', url).then(() => credentials.tokenFor('ci', url))).rejects.toBeInstanceOf(CredentialUnavailableError);
    }
  });

  it('refuses env: and file: references and malformed names, saying how to define a credential', () => {
    for (const reference of ['env:DB_PASSWORD', 'file:/etc/machine-id', 'file:/dev/zero', '../x', 'a b', '', 'x'.repeat(65)]) {
      expect(() => validateCredentialName(reference)).toThrow(InvalidCredentialRefError);
    }
    expect(() => validateCredentialName('env:DB_PASSWORD')).toThrow(/FORGESYNC_SECRETS_FILE.*FORGESYNC_CREDENTIAL_<NAME>/);
  });

  it('gives one and the same message for every failure, and never a secret or the file content', async () => {
    const target = 'https://github.com/o/r.git';
    const cases = {
      undefined: store(secretsFile({ other: { token: TOKEN, hosts: ['github.com'] } })),
      otherHost: store(secretsFile({ bot: { token: TOKEN, hosts: ['gitlab.com'] } })),
      malformed: store(secretsFile(`{"bot": {"token": "${TOKEN}", "hosts": ["github.com"]`)),
      wrongShape: store(secretsFile({ bot: TOKEN })),
      missingFile: store('/nonexistent/secrets.json'),
      directory: store(tmpdir()),
      noHosts: store(undefined, { FORGESYNC_CREDENTIAL_BOT: TOKEN }),
    };
    const messages = new Set<string>();
    for (const [, { credentials }] of Object.entries(cases)) messages.add(await message(credentials.tokenFor('bot', target)));
    expect([...messages]).toHaveLength(1);
    expect([...messages][0]).toMatch(/^CredentialUnavailableError: credential "bot" is not available for github.com: /);
    for (const { logs } of Object.values(cases)) expect(logs.text).not.toContain(TOKEN);
    expect(cases.malformed.logs.text).toContain('is not valid JSON');
  });

  it('reads the secrets file as a regular file only: no device, no FIFO, nothing huge, and follows a symlink to a file', async () => {
    const started = Date.now();
    for (const path of ['/dev/zero', '/dev/urandom']) {
      await expect(store(path).credentials.tokenFor('bot', 'https://github.com/x')).rejects.toBeInstanceOf(CredentialUnavailableError);
    }
    const dir = mkdtempSync(join(tmpdir(), 'forgesync-secrets-'));
    const fifo = join(dir, 'fifo');
    execFileSync('mkfifo', [fifo]);
    await expect(store(fifo).credentials.tokenFor('bot', 'https://github.com/x')).rejects.toBeInstanceOf(CredentialUnavailableError);
    const huge = join(dir, 'huge.json');
    writeFileSync(huge, `{"bot": {"token": "${TOKEN}", "hosts": ["github.com"], "pad": "${'x'.repeat(2 * 1024 * 1024)}"}}`);
    await expect(store(huge).credentials.tokenFor('bot', 'https://github.com/x')).rejects.toBeInstanceOf(CredentialUnavailableError);
    expect(Date.now() - started).toBeLessThan(5000);
    // Kubernetes mounts secrets as symlinks to files: those are fine.
    const real = secretsFile({ bot: { token: TOKEN, hosts: ['github.com'] } });
    const link = join(dir, 'link.json');
    symlinkSync(real, link);
    expect((await store(link).credentials.tokenFor('bot', 'https://github.com/x')).token).toBe(TOKEN);
  });

  it('reads the file again when it changes', async () => {
    const file = secretsFile({ bot: { token: TOKEN, hosts: ['github.com'] } });
    const { credentials } = store(file);
    expect((await credentials.tokenFor('bot', 'https://github.com/x')).token).toBe(TOKEN);
    writeFileSync(file, JSON.stringify({ bot: { token: `${TOKEN}-rotated`, hosts: ['github.com', 'gitlab.com'] } }));
    chmodSync(file, 0o600);
    expect((await credentials.tokenFor('bot', 'https://gitlab.com/x')).token).toBe(`${TOKEN}-rotated`);
  });
});
