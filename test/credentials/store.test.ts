import { execFileSync } from 'node:child_process';
import { chmodSync, mkdtempSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { CredentialUnavailableError, InvalidCredentialRefError } from '../../src/credentials/errors.js';
import { CredentialStore, validateCredentialName } from '../../src/credentials/store.js';
import { createLogger } from '../../src/logging/logger.js';
import { CapturedLogs } from '../support/harness.js';
import { testSecret } from '../support/secrets.js';

const TOKEN = testSecret('STORE_TOKEN', 'ghp_');

/** FORGESYNC_GIT_PROTOCOLS with plain http enabled. */
const WITH_HTTP: ReadonlySet<string> = new Set(['https', 'ssh', 'http']);

function store(secretsFile: string | undefined, env: NodeJS.ProcessEnv = {}, protocols?: ReadonlySet<string>) {
  const logs = new CapturedLogs();
  return { logs, credentials: new CredentialStore({ secretsFile, env, logger: createLogger({ level: 'warn', destination: logs }), ...(protocols ? { protocols } : {}) }) };
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
    const { credentials } = store(file, { FORGESYNC_CREDENTIAL_CI: `${TOKEN}-ci`, FORGESYNC_CREDENTIAL_CI_HOSTS: 'git.example.org, 10.0.0.5:3000' }, WITH_HTTP);
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

describe('credentials: tokens only over TLS unless the binding says otherwise', () => {
  /** Whether credential `bot` bound to `hosts` is handed out for `url`, and whether its token may follow to `url` from an https URL it is bound to. */
  async function verdicts(hosts: string, url: string, protocols?: ReadonlySet<string>) {
    const { credentials } = store(undefined, { FORGESYNC_CREDENTIAL_BOT: TOKEN, FORGESYNC_CREDENTIAL_BOT_HOSTS: hosts }, protocols);
    return credentials.tokenFor('bot', url).then(() => true, (error: Error) => (expect(error).toBeInstanceOf(CredentialUnavailableError), false));
  }

  it('a host alone means https on 443 (and ssh on 22), never plain http: not on port 80, not with http allowed', async () => {
    const bound = await store(undefined, { FORGESYNC_CREDENTIAL_BOT: TOKEN, FORGESYNC_CREDENTIAL_BOT_HOSTS: 'example-host' }, WITH_HTTP).credentials.tokenFor(
      'bot',
      'https://example-host/api/v3',
    );
    // The reported attack: a comment's http:// link to the API host, or a redirect there.
    expect(bound.allows(new URL('http://example-host/user-attachments/assets/x.png'))).toBe(false);
    expect(bound.allows(new URL('http://example-host:80/'))).toBe(false);
    expect(bound.allows(new URL('https://example-host:443/'))).toBe(true);
    expect(bound.allows(new URL('https://example-host/x'))).toBe(true);
    for (const protocols of [undefined, WITH_HTTP, new Set(['https', 'ssh', 'http', 'git'])]) {
      for (const url of ['http://example-host/', 'http://example-host:80/x.git', 'git://example-host/x.git', 'https://example-host:8443/', 'http://example-host:443/']) {
        expect(await verdicts('example-host', url, protocols), url).toBe(false);
      }
      for (const url of ['https://example-host/x.git', 'https://example-host:443/x.git', 'git@example-host:o/r.git', 'ssh://git@example-host/o/r.git', 'git+ssh://example-host/o/r.git', 'git@Example-Host:o/r.git', 'ssh://git@EXAMPLE-HOST/o/r.git']) {
        expect(await verdicts('example-host', url, protocols), url).toBe(true);
      }
    }
  });

  it('plain http only where the binding names the scheme or the port, and the configured protocols allow http', async () => {
    const cases: Array<{ hosts: string; url: string; withHttp: boolean; withoutHttp: boolean }> = [
      // A named port: any scheme on that port (the operator named it), http only when allowed.
      { hosts: '127.0.0.1:8080', url: 'http://127.0.0.1:8080/x.git', withHttp: true, withoutHttp: false },
      { hosts: '127.0.0.1:8080', url: 'https://127.0.0.1:8080/x.git', withHttp: true, withoutHttp: true },
      { hosts: '127.0.0.1:8080', url: 'http://127.0.0.1/x.git', withHttp: false, withoutHttp: false },
      { hosts: 'example-host:80', url: 'http://example-host/x.git', withHttp: true, withoutHttp: false },
      { hosts: 'example-host:443', url: 'https://example-host/x.git', withHttp: true, withoutHttp: true },
      { hosts: 'example-host:443', url: 'http://example-host:443/x.git', withHttp: true, withoutHttp: false },
      // A named scheme: that scheme only, on the port named or its default.
      { hosts: 'http://example-host', url: 'http://example-host/x.git', withHttp: true, withoutHttp: false },
      { hosts: 'http://example-host/', url: 'http://example-host:80/x.git', withHttp: true, withoutHttp: false },
      { hosts: 'http://example-host', url: 'https://example-host/x.git', withHttp: false, withoutHttp: false },
      { hosts: 'http://example-host:8080', url: 'http://example-host:8080/x.git', withHttp: true, withoutHttp: false },
      { hosts: 'http://example-host:8080', url: 'https://example-host:8080/x.git', withHttp: false, withoutHttp: false },
      { hosts: 'HTTPS://Example-Host:8443', url: 'https://example-host:8443/x.git', withHttp: true, withoutHttp: true },
      { hosts: 'https://example-host:8443', url: 'http://example-host:8443/x.git', withHttp: false, withoutHttp: false },
      { hosts: 'https://example-host', url: 'git@example-host:o/r.git', withHttp: false, withoutHttp: false },
    ];
    for (const { hosts, url, withHttp, withoutHttp } of cases) {
      expect(await verdicts(hosts, url, WITH_HTTP), `${hosts} → ${url} with http`).toBe(withHttp);
      expect(await verdicts(hosts, url), `${hosts} → ${url} without http`).toBe(withoutHttp);
    }
  });

  it('refuses a binding with another scheme, a path or a user, and says which forms are accepted', async () => {
    for (const entry of ['ssh://example-host', 'ftp://example-host', 'http://example-host/x', 'http://user@example-host', 'http://', 'https://example-host//', 'example-host/']) {
      const { credentials, logs } = store(secretsFile({ bot: { token: TOKEN, hosts: [entry] } }), {}, WITH_HTTP);
      await expect(credentials.tokenFor('bot', 'https://example-host/x.git'), entry).rejects.toBeInstanceOf(CredentialUnavailableError);
      expect(logs.text, entry).toContain('host 1 is not host, host:port or http(s)://host[:port]');
    }
  });
});
