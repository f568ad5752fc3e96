import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Forgesync } from '../../src/app/forgesync.js';
import { startFakeGitHub, type FakeGitHub, type FakeGitHubOptions } from '../fake-github/index.js';
import { createTestDatabase, openTestForgesync, testConfig, type CapturedLogs } from '../support/harness.js';
import { testSecret } from '../support/secrets.js';

/** A fake GitHub and a forgesync with a credential bound to its API host. */
export interface ImportHarness {
  fake: FakeGitHub;
  app: Forgesync;
  logs: CapturedLogs;
  token: string;
  databaseUrl: string;
  env: Record<string, string>;
  /** `import github <owner>/<repo> --api-url <fake> --credential GH`. */
  project: string;
  close(): Promise<void>;
}

export interface ImportHarnessOptions {
  database?: 'sqlite' | 'postgres';
  fake?: FakeGitHubOptions;
  env?: Record<string, string>;
  /** Tokens (several: several credentials GH, GH2, …). */
  tokens?: number;
}

/** A secrets file defining credentials GH, GH2, … bound to the fake's API host (and its web host, for git). */
export function credentialEnv(fake: FakeGitHub, tokens: readonly string[]): Record<string, string> {
  const hosts = [new URL(fake.apiUrl).host, new URL(fake.webUrl).host];
  const file = join(mkdtempSync(join(tmpdir(), 'forgesync-secrets-')), 'secrets.json');
  writeFileSync(file, JSON.stringify(Object.fromEntries(tokens.map((token, index) => [index === 0 ? 'GH' : `GH${index + 1}`, { token, hosts }]))), { mode: 0o600 });
  return { FORGESYNC_SECRETS_FILE: file };
}

export const credentialNames = (count: number) => Array.from({ length: count }, (_, index) => (index === 0 ? 'GH' : `GH${index + 1}`));

export async function startImportHarness(options: ImportHarnessOptions = {}): Promise<ImportHarness> {
  const tokens = Array.from({ length: options.tokens ?? 1 }, (_, index) => testSecret(`GITHUB_TOKEN_${index}`));
  const fake = await startFakeGitHub({ tokens, ...options.fake });
  const database = await createTestDatabase(options.database ?? 'sqlite');
  const env = { FORGESYNC_IMPORT_RETRY_BASE: '20ms', FORGESYNC_LEASE_TTL: '5s', ...credentialEnv(fake, tokens), ...options.env };
  const { app, logs } = await openTestForgesync(testConfig(database.url, env));
  return {
    fake,
    app,
    logs,
    token: tokens[0]!,
    databaseUrl: database.url,
    env,
    project: `${fake.project.repo.owner}/${fake.project.repo.name}`,
    close: async () => {
      await app.close();
      await fake.close();
    },
  };
}

export { expectedCounts, importedCounts } from './counts.js';
