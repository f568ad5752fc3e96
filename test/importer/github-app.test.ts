import { generateKeyPairSync } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Forgesync } from '../../src/app/forgesync.js';
import { startFakeGitHub, type FakeGitHub } from '../fake-github/index.js';
import { createTestDatabase, openTestForgesync, testConfig, type CapturedLogs } from '../support/harness.js';
import { expectedCounts, importedCounts } from './counts.js';

/*
 * An import whose credential is a GitHub App installation: forgesync signs
 * the App's JWT, mints installation tokens at the fake's
 * /app/installations/{id}/access_tokens, and imports with them. The fake's
 * tokens live 0.8 s here (GitHub's an hour) and every answer is slowed, so
 * the import outlives its first token: it must refresh it before it expires
 * (an expired token is answered 401, which fails an import).
 */

const APP_ID = 9001;
const INSTALLATION_ID = 31337;
const TOKEN_LIFETIME_MS = 800;

describe('an import with a GitHub App credential', () => {
  const pair = generateKeyPairSync('rsa', { modulusLength: 2048, publicKeyEncoding: { type: 'spki', format: 'pem' }, privateKeyEncoding: { type: 'pkcs8', format: 'pem' } });
  let fake: FakeGitHub;
  let app: Forgesync;
  let logs: CapturedLogs;
  let status: Awaited<ReturnType<Forgesync['importer']['status']>>;
  let outcome: string;

  beforeAll(async () => {
    fake = await startFakeGitHub({ tokens: [], latencyMs: 40, requireGitAuth: true, app: { appId: APP_ID, publicKey: pair.publicKey, installationId: INSTALLATION_ID, tokenLifetimeMs: TOKEN_LIFETIME_MS } });
    const hosts = [new URL(fake.apiUrl).host, new URL(fake.webUrl).host];
    const file = join(mkdtempSync(join(tmpdir(), 'forgesync-secrets-')), 'secrets.json');
    writeFileSync(file, JSON.stringify({ GH_APP: { appId: APP_ID, privateKey: pair.privateKey, installationId: INSTALLATION_ID, hosts, apiUrl: fake.apiUrl } }), { mode: 0o600 });
    const database = await createTestDatabase('sqlite');
    ({ app, logs } = await openTestForgesync(testConfig(database.url, { FORGESYNC_IMPORT_RETRY_BASE: '20ms', FORGESYNC_SECRETS_FILE: file })));
    const record = await app.importer.create({ project: `${fake.project.repo.owner}/${fake.project.repo.name}`, apiUrl: fake.apiUrl, credentials: ['GH_APP'], concurrency: 4 });
    ({ outcome } = await app.importer.runHere(record.name));
    status = await app.importer.status(record.name);
  }, 120_000);
  afterAll(async () => {
    await app?.close();
    await fake?.close();
  });

  it('syncs everything, with installation tokens minted from JWTs the fake verified', () => {
    expect(status.failure).toBeNull();
    expect(outcome).toBe('synced');
    expect(importedCounts(status)).toEqual(expectedCounts(fake));
    const jwts = fake.app!.jwts;
    expect(jwts.length).toBeGreaterThan(0);
    for (const jwt of jwts) {
      expect(jwt.iss).toBe(String(APP_ID));
      expect(jwt.exp - jwt.iat).toBeLessThanOrEqual(600);
    }
    expect(fake.app!.refused).toEqual([]);
    const api = fake.requests.filter((entry) => entry.host === 'api' && entry.pathKind !== 'app_access_tokens');
    // Every API request carried a minted token the fake accepted: none anonymous, none refused.
    expect(api.length).toBeGreaterThan(0);
    expect(api.filter((entry) => entry.tokenIndex < 0)).toEqual([]);
    expect(api.filter((entry) => entry.status === 401)).toEqual([]);
  });

  it('refreshes the token before it expires: several tokens used, none after its expiry', () => {
    const minted = fake.app!.minted;
    expect(minted.length).toBeGreaterThan(1);
    const api = fake.requests.filter((entry) => entry.host === 'api' && entry.tokenIndex >= 0);
    const used = new Set(api.map((entry) => entry.tokenIndex));
    expect(used.size).toBeGreaterThan(1);
    // The fake's token list is the minted tokens in order: each request arrived before its token's expiry.
    for (const entry of api) expect(entry.at).toBeLessThan(minted[entry.tokenIndex]!.expiresAt);
  });

  it('fetched git with an installation token (the fake requires one) and kept the key and tokens out of logs and the database', async () => {
    expect(status.sources.repository?.state).toBe('synced');
    const keyLine = pair.privateKey.split('\n')[1]!;
    const text = logs.text;
    expect(text).not.toContain(keyLine);
    for (const { token } of fake.app!.minted) expect(text).not.toContain(token);
    const rows = await app.kernel.database.db.selectFrom('imports').selectAll().execute();
    const dump = JSON.stringify(rows);
    expect(dump).toContain('GH_APP');
    for (const { token } of fake.app!.minted) expect(dump).not.toContain(token);
    expect(dump).not.toContain(keyLine);
  });
});
