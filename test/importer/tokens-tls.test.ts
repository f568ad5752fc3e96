import { mkdtempSync, writeFileSync } from 'node:fs';
import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { CredentialUnavailableError } from '../../src/credentials/errors.js';
import { startFakeGitHub, type FakeGitHub } from '../fake-github/index.js';
import { createTestDatabase, openTestForgesync, testConfig } from '../support/harness.js';
import { testSecret } from '../support/secrets.js';
import { credentialEnv } from './harness.js';

// Issue 24, finding 2: a credential goes over plain HTTP only where its binding names the
// scheme or the port and FORGESYNC_GIT_PROTOCOLS lists http. The fake GitHub speaks plain
// HTTP on 127.0.0.1, so these imports have an http API URL (as an operator may choose).

const closers: Array<() => Promise<void>> = [];
afterAll(async () => {
  for (const close of closers.reverse()) await close();
});

/** A plain-HTTP listener on 127.0.0.1 that records what reaches it. */
async function plainListener(): Promise<{ port: number; requests: Array<{ path: string; headers: IncomingHttpHeaders }> }> {
  const requests: Array<{ path: string; headers: IncomingHttpHeaders }> = [];
  const server = createServer((req, res) => {
    requests.push({ path: req.url ?? '', headers: req.headers });
    res.writeHead(200, { 'content-type': 'image/png' }).end('png');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  closers.push(() => new Promise((resolve) => server.close(() => resolve())));
  return { port: (server.address() as AddressInfo).port, requests };
}

function secretsFile(content: unknown): string {
  const file = join(mkdtempSync(join(tmpdir(), 'forgesync-secrets-')), 'secrets.json');
  writeFileSync(file, JSON.stringify(content), { mode: 0o600 });
  return file;
}

async function fakeWith(token: string): Promise<FakeGitHub> {
  const fake = await startFakeGitHub({ tokens: [token] });
  closers.push(() => fake.close());
  return fake;
}

describe('an import sends its token over plain HTTP only where the binding says so', () => {
  it('a credential bound to the host without a port carries no token to the plain-HTTP web host, nor to a linked listener', async () => {
    const token = testSecret('TLS_BARE_TOKEN');
    const fake = await fakeWith(token);
    const elsewhere = await plainListener();
    const api = new URL(fake.apiUrl);
    // The API port named (the operator chose http there); the host alone otherwise: meant for https.
    const env = { FORGESYNC_SECRETS_FILE: secretsFile({ GH: { token, hosts: [api.host, api.hostname, 'localhost'] } }), FORGESYNC_IMPORT_RETRY_BASE: '20ms' };
    fake.project.comment(1, `Logs: ![log](http://127.0.0.1:${elsewhere.port}/user-attachments/assets/x.png) and ![80](http://127.0.0.1/user-attachments/assets/y.png)`);
    const database = await createTestDatabase('sqlite');
    const { app } = await openTestForgesync(testConfig(database.url, env));
    closers.push(() => app.close());
    const record = await app.importer.create({ project: `${fake.project.repo.owner}/${fake.project.repo.name}`, apiUrl: fake.apiUrl, credentials: ['GH'] });
    const { outcome } = await app.importer.runHere(record.name);
    expect(outcome).toBe('synced');

    // The API (its port named) got the token; the web host's files came without it.
    expect(fake.requests.some((entry) => entry.host === 'api' && entry.tokenIndex === 0)).toBe(true);
    const files = fake.requests.filter((entry) => entry.host === 'web' && entry.pathKind === 'attachment');
    expect(files.filter((entry) => entry.status === 200).length).toBeGreaterThan(0);
    expect(files.filter((entry) => entry.tokenIndex !== -1)).toEqual([]);
    // A link to another port is not the project's: left as a link, nothing sent there.
    expect(elsewhere.requests).toEqual([]);
    const refused = await app.kernel.database.db.selectFrom('import_attachments').select('url').where('state', '=', 'refused').execute();
    expect(refused.map((row) => row.url)).toEqual(expect.arrayContaining([`http://127.0.0.1:${elsewhere.port}/user-attachments/assets/x.png`, 'http://127.0.0.1/user-attachments/assets/y.png']));
  });

  it('once FORGESYNC_GIT_PROTOCOLS no longer lists http, an http import gets no token, even where the binding names the port', async () => {
    const token = testSecret('TLS_PROTOCOLS_TOKEN');
    const fake = await fakeWith(token);
    const env = { ...credentialEnv(fake, [token]), FORGESYNC_IMPORT_RETRY_BASE: '20ms' };
    const database = await createTestDatabase('sqlite');
    // Created while http was allowed…
    const before = await openTestForgesync(testConfig(database.url, env));
    const record = await before.app.importer.create({ project: `${fake.project.repo.owner}/${fake.project.repo.name}`, apiUrl: fake.apiUrl, credentials: ['GH'] });
    await before.app.close();
    // …run after the operator took http out.
    const { app } = await openTestForgesync(testConfig(database.url, { ...env, FORGESYNC_GIT_PROTOCOLS: 'https,ssh,file' }));
    closers.push(() => app.close());
    // The run cannot start: its credential is not available for the http API (the import fails with that reason).
    const run = await app.importer.runHere(record.name).then(
      async ({ outcome }) => ({ outcome, reason: (await app.importer.status(record.name)).failure }),
      (error: Error) => (expect(error).toBeInstanceOf(CredentialUnavailableError), { outcome: 'failed', reason: error.message }),
    );
    expect(run.outcome).toBe('failed');
    expect(run.reason).toMatch(/credential "GH" is not available for 127\.0\.0\.1:\d+/);
    expect(fake.requests.filter((entry) => entry.tokenIndex !== -1)).toEqual([]);
  });
});
