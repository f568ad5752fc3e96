import { afterAll, describe, expect, it } from 'vitest';
import { generateProject } from '../fake-github/index.js';
import { credentialNames, expectedCounts, importedCounts, startImportHarness, type ImportHarness } from './harness.js';

/*
 * Issue 29: against a host allowing 6 concurrent requests per token, an
 * import asking for 20 in flight used to keep 20 going and collect hundreds
 * of secondary-limit answers. The pacer now learns the host's limit: a
 * handful of answers for the whole import, and everything imported.
 */
describe('an import against a host with a secondary limit of 6 concurrent requests', () => {
  let h: ImportHarness;
  afterAll(async () => h?.close());

  it('asks 20 in flight, gets at most 10 secondary-limit answers, and imports everything', async () => {
    const project = generateProject({ issues: 80, pulls: 20, commentsPerIssue: 4, reviewCommentsPerPull: 3, reviewsPerPull: 2, users: 30, seed: 29 });
    h = await startImportHarness({ fake: { project, maxConcurrent: 6, secondaryRetryAfterS: 1, latencyMs: 20 } });
    const record = await h.app.importer.create({ project: h.project, apiUrl: h.fake.apiUrl, credentials: credentialNames(1), concurrency: 20 });
    const { outcome } = await h.app.importer.runHere(record.name);
    const status = await h.app.importer.status(record.name);
    expect(status.failure).toBeNull();
    expect(outcome).toBe('synced');
    expect(importedCounts(status)).toEqual(expectedCounts(h.fake));
    const secondary = h.fake.requests.filter((entry) => entry.host === 'api' && entry.status === 403);
    expect(secondary.length).toBeGreaterThan(0);
    expect(secondary.length).toBeLessThanOrEqual(10);
    // Status counts the API client's answers; release asset downloads are paced with them but read only the status.
    const downloads = secondary.filter((entry) => entry.path.includes('/releases/assets/'));
    expect(status.requests.secondaryLimited).toBe(secondary.length - downloads.length);
  }, 120_000);
});
