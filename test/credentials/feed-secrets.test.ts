import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { CredentialUnavailableError, FeedSecretUnavailableError } from '../../src/credentials/errors.js';
import { CredentialStore } from '../../src/credentials/store.js';
import { secretTargetOf } from '../../src/feeds/sinks/url.js';
import { createLogger } from '../../src/logging/logger.js';
import { CapturedLogs } from '../support/harness.js';
import { testSecret } from '../support/secrets.js';

const SECRET = testSecret('FEED_STORE_SECRET', 'whsec_');
const TOKEN = testSecret('FEED_STORE_TOKEN', 'ghp_');

function store(secretsFile: string | undefined, env: NodeJS.ProcessEnv = {}) {
  const logs = new CapturedLogs();
  return { logs, secrets: new CredentialStore({ secretsFile, env, logger: createLogger({ level: 'warn', destination: logs }) }) };
}

function secretsFile(content: unknown): string {
  const file = join(mkdtempSync(join(tmpdir(), 'forgesync-secrets-')), 'secrets.json');
  writeFileSync(file, typeof content === 'string' ? content : JSON.stringify(content));
  return file;
}

/** The URL a feed's sink is checked with (a NATS URL with its port written out). */
const sink = (url: string) => secretTargetOf(new URL(url));
const message = (promise: Promise<unknown>) => promise.then(() => 'resolved', (error: Error) => `${error.name}: ${error.message}`);

describe('feed secrets: named by the operator, bound to sink hosts', () => {
  it('hands a secret out only for the sink hosts it is bound to, from the secrets file or the environment', async () => {
    const file = secretsFile({
      github_bot: { token: TOKEN, hosts: ['github.com'] },
      'feed:Orders': { secret: SECRET, hosts: ['nats.internal:4222', 'hooks.example.com', '127.0.0.1:8080'] },
    });
    const { secrets } = store(file, { FORGESYNC_FEED_SECRET_CI: `${SECRET}-ci`, FORGESYNC_FEED_SECRET_CI_HOSTS: '10.0.0.5:4222' });
    expect(await secrets.feedSecretFor('orders', sink('nats://nats.internal:4222/forgesync.changes'))).toBe(SECRET);
    // A NATS URL without a port is the client's default port.
    expect(await secrets.feedSecretFor('ORDERS', sink('nats://nats.internal/forgesync.changes'))).toBe(SECRET);
    expect(await secrets.feedSecretFor('orders', sink('https://hooks.example.com/in'))).toBe(SECRET);
    expect(await secrets.feedSecretFor('orders', sink('http://127.0.0.1:8080/in'))).toBe(SECRET);
    expect(await secrets.feedSecretFor('ci', sink('nats://10.0.0.5/x'))).toBe(`${SECRET}-ci`);
    for (const url of ['nats://attacker.example:4222/x', 'nats://nats.internal:4223/x', 'https://hooks.example.com.attacker.example/in', 'https://hooks.example.com:8443/in', 'nats://hooks.example.com/x']) {
      await expect(secrets.feedSecretFor('orders', sink(url)), url).rejects.toBeInstanceOf(FeedSecretUnavailableError);
    }
    // Credentials and feed secrets are apart: neither name reaches the other.
    await expect(secrets.feedSecretFor('github_bot', sink('https://github.com/x'))).rejects.toBeInstanceOf(FeedSecretUnavailableError);
    await expect(secrets.tokenFor('orders', 'https://hooks.example.com/x')).rejects.toBeInstanceOf(CredentialUnavailableError);
    expect((await secrets.tokenFor('github_bot', 'https://github.com/o/r.git')).token).toBe(TOKEN);
  });

  it('a NATS host is bound with its port: a binding without one is for web ports only', async () => {
    const { secrets } = store(secretsFile({ 'feed:bare': { secret: SECRET, hosts: ['nats.internal'] } }));
    await expect(secrets.feedSecretFor('bare', sink('nats://nats.internal/x'))).rejects.toBeInstanceOf(FeedSecretUnavailableError);
    await expect(secrets.feedSecretFor('bare', sink('nats://nats.internal:443/x'))).rejects.toBeInstanceOf(FeedSecretUnavailableError);
    expect(await secrets.feedSecretFor('bare', sink('https://nats.internal/hook'))).toBe(SECRET);
  });

  it('gives one message, word for word, for every failure: it tells nothing about the environment', async () => {
    const target = sink('nats://127.0.0.1:4222/x');
    const env = {
      FORGESYNC_CREDENTIAL_GITHUB_BOT: TOKEN,
      FORGESYNC_CREDENTIAL_GITHUB_BOT_HOSTS: '127.0.0.1:4222',
      FORGESYNC_GENERIC_WEBHOOK_SECRET: SECRET,
      FORGESYNC_FEED_SECRET_OTHER: SECRET,
      FORGESYNC_FEED_SECRET_OTHER_HOSTS: 'nats.internal:4222',
      FORGESYNC_FEED_SECRET_NOHOSTS: SECRET,
    };
    const file = secretsFile({ github_bot: { token: TOKEN, hosts: ['127.0.0.1:4222'] }, 'feed:filed': { secret: SECRET, hosts: ['nats.internal:4222'] } });
    const cases: [string, ReturnType<typeof store>][] = [
      // Set in the environment, but no feed secret: the credential's variable, the generic webhook's, the credential's name.
      ['FORGESYNC_CREDENTIAL_GITHUB_BOT', store(file, env)],
      ['FORGESYNC_GENERIC_WEBHOOK_SECRET', store(file, env)],
      ['github_bot', store(file, env)],
      // Not set anywhere.
      ['UNSET_VARIABLE_XYZ', store(file, env)],
      // Defined, but for another host; defined without hosts.
      ['other', store(file, env)],
      ['filed', store(file, env)],
      ['nohosts', store(file, env)],
      // Malformed names: a reference, a path, an empty one.
      ['env:FORGESYNC_CREDENTIAL_GITHUB_BOT', store(file, env)],
      ['../etc/passwd', store(file, env)],
      ['', store(file, env)],
      // The secrets file unreadable or malformed.
      ['filed', store('/nonexistent/secrets.json')],
      ['filed', store(secretsFile('{"feed:filed": '))],
    ];
    const messages = new Set<string>();
    for (const [name, { secrets }] of cases) messages.add(await message(secrets.feedSecretFor(name, target)));
    expect([...messages]).toHaveLength(1);
    const [only] = [...messages];
    expect(only).toMatch(/^FeedSecretUnavailableError: the feed's secret cannot be used with its sink: the operator defines feed secrets, .*FORGESYNC_SECRETS_FILE.*"feed:<name>".*FORGESYNC_FEED_SECRET_<NAME>=<secret>.*FORGESYNC_FEED_SECRET_<NAME>_HOSTS=host\[:port\]/);
    expect(only).not.toContain(TOKEN);
    expect(only).not.toContain(SECRET);
    for (const [, { logs }] of cases) {
      expect(logs.text).not.toContain(TOKEN);
      expect(logs.text).not.toContain(SECRET);
    }
  });

  it('shares the secrets file with the credentials: one bad entry of either kind is logged, never its content', async () => {
    const bad = store(secretsFile({ 'feed:short': { secret: 'x', hosts: ['nats.internal:4222'] }, bot: { token: TOKEN, hosts: ['github.com'] } }));
    await expect(bad.secrets.feedSecretFor('short', sink('nats://nats.internal:4222/x'))).rejects.toBeInstanceOf(FeedSecretUnavailableError);
    expect(bad.logs.text).toContain('feed secret \\"short\\" needs a secret of at least 4 characters');
    const misnamed = store(secretsFile({ 'feed:a b': { secret: SECRET, hosts: ['nats.internal:4222'] } }));
    await expect(misnamed.secrets.feedSecretFor('a_b', sink('nats://nats.internal:4222/x'))).rejects.toBeInstanceOf(FeedSecretUnavailableError);
    expect(misnamed.logs.text).toContain('has a feed secret name that is not 1-64 letters');
    const twice = store(secretsFile({ 'feed:dup': { secret: SECRET, hosts: ['h:1'] }, 'feed:DUP': { secret: SECRET, hosts: ['h:1'] } }));
    await expect(twice.secrets.feedSecretFor('dup', sink('nats://h:1/x'))).rejects.toBeInstanceOf(FeedSecretUnavailableError);
    expect(twice.logs.text).toContain('defines feed secret \\"DUP\\" twice');
    const noHosts = store(undefined, { FORGESYNC_FEED_SECRET_LONE: SECRET });
    await expect(noHosts.secrets.feedSecretFor('lone', sink('nats://h:1/x'))).rejects.toBeInstanceOf(FeedSecretUnavailableError);
    expect(noHosts.logs.text).toContain('FORGESYNC_FEED_SECRET_LONE');
    for (const { logs } of [bad, misnamed, twice, noHosts]) expect(logs.text).not.toContain(SECRET);
  });

  it('reads the file again when it changes: a binding taken away is taken away at once', async () => {
    const file = secretsFile({ 'feed:orders': { secret: SECRET, hosts: ['nats.internal:4222'] } });
    const { secrets } = store(file);
    expect(await secrets.feedSecretFor('orders', sink('nats://nats.internal/x'))).toBe(SECRET);
    writeFileSync(file, JSON.stringify({ 'feed:orders': { secret: `${SECRET}-rotated`, hosts: ['nats.other:4222'] } }));
    await expect(secrets.feedSecretFor('orders', sink('nats://nats.internal/x'))).rejects.toBeInstanceOf(FeedSecretUnavailableError);
    expect(await secrets.feedSecretFor('orders', sink('nats://nats.other/x'))).toBe(`${SECRET}-rotated`);
  });
});
