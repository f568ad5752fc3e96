import { generateKeyPairSync } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseAppIdentity } from '../../src/credentials/app.js';
import { CredentialStore } from '../../src/credentials/store.js';
import { createLogger } from '../../src/logging/logger.js';
import { startFakeGitHub, type FakeGitHub } from '../fake-github/index.js';
import { loopbackEgress } from '../support/egress.js';
import { testSecret } from '../support/secrets.js';
import { CapturedLogs } from '../support/harness.js';

/*
 * A credential may be a GitHub App installation: its id, private key and
 * installation id. The store mints installation tokens from the fake
 * GitHub's access-token endpoint; the key and the tokens never appear in
 * errors or logs, and a key that is not an RSA PEM is named as such.
 */

const WITH_HTTP: ReadonlySet<string> = new Set(['https', 'ssh', 'http']);
const APP_ID = 4242;
const INSTALLATION_ID = 777;

const pair = generateKeyPairSync('rsa', { modulusLength: 2048, publicKeyEncoding: { type: 'spki', format: 'pem' }, privateKeyEncoding: { type: 'pkcs1', format: 'pem' } });
const other = generateKeyPairSync('rsa', { modulusLength: 2048, publicKeyEncoding: { type: 'spki', format: 'pem' }, privateKeyEncoding: { type: 'pkcs8', format: 'pem' } });
/** The base64 body of the key: a leak of any part of it shows as this line. */
const KEY_BODY_LINE = pair.privateKey.split('\n')[1]!;

function tempFile(name: string, content: string): string {
  const file = join(mkdtempSync(join(tmpdir(), 'forgesync-app-')), name);
  writeFileSync(file, content, { mode: 0o600 });
  return file;
}

function store(secretsFile: string | undefined, env: NodeJS.ProcessEnv = {}) {
  const logs = new CapturedLogs();
  const credentials = new CredentialStore({ secretsFile, env, logger: createLogger({ level: 'info', destination: logs }), protocols: WITH_HTTP, egress: loopbackEgress() });
  return { logs, credentials };
}

const failure = (promise: Promise<unknown>) => promise.then(() => 'resolved', (error: Error) => `${error.name}: ${error.message}`);

describe('GitHub App credentials', () => {
  let fake: FakeGitHub;
  let hosts: string[];

  beforeAll(async () => {
    fake = await startFakeGitHub({ git: false, app: { appId: APP_ID, publicKey: pair.publicKey, installationId: INSTALLATION_ID } });
    hosts = [new URL(fake.apiUrl).host];
  });
  afterAll(async () => fake?.close());

  it('from the secrets file: mints an installation token with a valid JWT, and hands it out like a token', async () => {
    const file = tempFile('secrets.json', JSON.stringify({ bot: { appId: APP_ID, privateKey: pair.privateKey, installationId: String(INSTALLATION_ID), hosts } }));
    const { credentials, logs } = store(file);
    const jwtsBefore = fake.app!.jwts.length;
    const bound = await credentials.tokenFor('bot', fake.apiUrl);
    expect(fake.app!.jwts.length).toBe(jwtsBefore + 1);
    const jwt = fake.app!.jwts.at(-1)!;
    expect(jwt.iss).toBe(String(APP_ID));
    expect(jwt.exp - jwt.iat).toBeLessThanOrEqual(600);
    expect(bound.token).toBe(fake.app!.minted.at(-1)!.token);
    expect(bound.token).toMatch(/^ghs_/);
    expect(bound.allows(new URL(fake.apiUrl))).toBe(true);
    expect(bound.allows(new URL('https://github.com/'))).toBe(false);
    // Cached: a second caller gets the same token without a second mint.
    expect((await credentials.tokenFor('BOT', fake.apiUrl)).token).toBe(bound.token);
    expect(fake.app!.jwts.length).toBe(jwtsBefore + 1);
    expect(await credentials.list()).toEqual([{ name: 'bot', kind: 'app', hosts: [expect.objectContaining({ hostname: '127.0.0.1' })] }]);
    for (const text of [logs.text, JSON.stringify(await credentials.list())]) {
      expect(text).not.toContain(KEY_BODY_LINE);
      expect(text).not.toContain(bound.token);
    }
  });

  it('from the environment: the key read from _PRIVATE_KEY_FILE, listed with its kind next to token credentials', async () => {
    const keyFile = tempFile('app.pem', other.privateKey);
    const env = {
      FORGESYNC_CREDENTIAL_CI_APP_ID: String(APP_ID),
      FORGESYNC_CREDENTIAL_CI_INSTALLATION_ID: String(INSTALLATION_ID),
      FORGESYNC_CREDENTIAL_CI_PRIVATE_KEY_FILE: keyFile,
      FORGESYNC_CREDENTIAL_CI_HOSTS: hosts.join(','),
      FORGESYNC_CREDENTIAL_PLAIN: testSecret('APP_TEST_PLAIN_TOKEN', 'ghp_'),
      FORGESYNC_CREDENTIAL_PLAIN_HOSTS: 'github.com',
    };
    const { credentials, logs } = store(undefined, env);
    expect((await credentials.list()).map(({ name, kind }) => ({ name, kind }))).toEqual([
      { name: 'ci', kind: 'app' },
      { name: 'plain', kind: 'token' },
    ]);
    // Signed by a key the fake does not know: GitHub's 401, and the caller sees only "not available".
    const refusedBefore = fake.app!.refused.length;
    const error = await failure(credentials.tokenFor('ci', fake.apiUrl));
    expect(error).toMatch(/^CredentialUnavailableError: credential "ci" is not available/);
    expect(fake.app!.refused.length).toBe(refusedBefore + 1);
    expect(logs.text).toMatch(/installation token of credential \\?"ci\\?" cannot be minted: GitHub answered 401/);
    expect(logs.text).not.toContain(other.privateKey.split('\n')[1]!);
    expect(error).not.toContain(keyFile);
  });

  it('a bad key: the error names the credential and what is wrong, never the key', () => {
    const broken = pair.privateKey.replace(/(\n[A-Za-z0-9+/=]{10})[A-Za-z0-9+/=]{20}/, '$1');
    const ec = generateKeyPairSync('ec', { namedCurve: 'P-256', privateKeyEncoding: { type: 'pkcs8', format: 'pem' }, publicKeyEncoding: { type: 'spki', format: 'pem' } });
    const attempts: [unknown, RegExp][] = [
      [broken, /GitHub App credential "bot" needs privateKey .*: it cannot be decoded as a private key$/],
      [KEY_BODY_LINE, /GitHub App credential "bot" needs privateKey .*: it is not PEM$/],
      [ec.privateKey, /GitHub App credential "bot" needs privateKey .*: it is a ec key, not RSA$/],
      [42, /it is not PEM$/],
    ];
    for (const [privateKey, expected] of attempts) {
      let message = '';
      try {
        parseAppIdentity('bot', { appId: APP_ID, privateKey, installationId: INSTALLATION_ID });
      } catch (error) {
        message = (error as Error).message;
      }
      expect(message).toMatch(expected);
      expect(message).not.toContain(KEY_BODY_LINE.slice(0, 16));
      expect(message).not.toContain(ec.privateKey.split('\n')[1]!.slice(0, 16));
    }
    expect(() => parseAppIdentity('bot', { appId: 'x1', privateKey: pair.privateKey, installationId: 1 })).toThrow(/needs appId/);
    expect(() => parseAppIdentity('bot', { appId: 1, privateKey: pair.privateKey, installationId: -3 })).toThrow(/needs installationId/);
  });

  it('a bad key in the secrets file: logged with the credential named, the key nowhere; the caller sees "not available"', async () => {
    const broken = pair.privateKey.replace(/(\n[A-Za-z0-9+/=]{10})[A-Za-z0-9+/=]{20}/, '$1');
    const file = tempFile('secrets.json', JSON.stringify({ bot: { appId: APP_ID, privateKey: broken, installationId: INSTALLATION_ID, hosts } }));
    const { credentials, logs } = store(file);
    const error = await failure(credentials.tokenFor('bot', fake.apiUrl));
    expect(error).toMatch(/^CredentialUnavailableError: credential "bot" is not available/);
    expect(logs.text).toMatch(/GitHub App credential \\?"bot\\?" needs privateKey .*cannot be decoded as a private key/);
    expect(logs.text + error).not.toContain(KEY_BODY_LINE.slice(0, 16));
  });

  it('an API URL the credential is not bound to gets no token, and no JWT is sent there', async () => {
    const file = tempFile('secrets.json', JSON.stringify({ bot: { appId: APP_ID, privateKey: pair.privateKey, installationId: INSTALLATION_ID, hosts, apiUrl: 'http://127.0.0.2:9/api/v3' } }));
    const { credentials, logs } = store(file);
    const jwtsBefore = fake.app!.jwts.length;
    expect(await failure(credentials.tokenFor('bot', fake.apiUrl))).toMatch(/^CredentialUnavailableError/);
    expect(logs.text).toMatch(/not bound to 127\.0\.0\.2:9/);
    expect(fake.app!.jwts.length).toBe(jwtsBefore);
  });
});
