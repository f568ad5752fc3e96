import { afterEach, describe, expect, it } from 'vitest';
import { generateProject } from '../fake-github/index.js';
import { credentialNames, startImportHarness, type ImportHarness } from './harness.js';

/*
 * An API host that answers lists and objects GitHub never would (issue 24,
 * "JSON shapes"): a list holding null, an object where a list belongs, ids
 * that are objects, JSON nested a hundred thousand levels deep. Before, these
 * surfaced as TypeErrors and RangeErrors (stack overflows) with no list
 * named, or were stored as keys like "[object Object]". Now each is a typed
 * failure that names the list, and nothing of that answer is stored.
 */

const project = () => generateProject({ issues: 6, pulls: 2, commentsPerIssue: 1, reviewCommentsPerPull: 1, reviewsPerPull: 1, users: 3, seed: 7 });

/** `{"a":{"a":…}}`, `depth` levels, as text (JSON.stringify would overflow its own stack). */
const nested = (depth: number): string => `${'{"a":'.repeat(depth)}1${'}'.repeat(depth)}`;

let h: ImportHarness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

async function importWith(setUp: (h: ImportHarness) => void) {
  h = await startImportHarness({ fake: { project: project() } });
  setUp(h);
  const record = await h.app.importer.create({ project: h.project, apiUrl: h.fake.apiUrl, credentials: credentialNames(1) });
  const { outcome } = await h.app.importer.runHere(record.name);
  const status = await h.app.importer.status(record.name);
  const stored = await h.app.kernel.database.db.selectFrom('import_objects').select(['type', 'key']).where('import_id', '=', record.id).execute();
  return { outcome, status, stored };
}

describe('answers GitHub never gives', () => {
  it('a list holding null or an id that is an object fails the run naming the list, and stores nothing of it', async () => {
    for (const body of [[null], [{ id: { $gt: 1 }, name: 'bug' }], { message: 'not a list' }]) {
      const { outcome, status, stored } = await importWith((harness) =>
        harness.fake.inject({ match: (request) => request.path.endsWith('/labels'), times: Infinity, fault: { status: 200, body } }),
      );
      expect(outcome).toBe('failed');
      expect(status.failure).toMatch(/^the API host's answer for (\/repos\/[^ ]+\/labels|label "\[object Object\]") cannot be imported: /);
      expect(stored.filter((row) => row.type === 'label')).toEqual([]);
      await h!.close();
      h = undefined;
    }
  }, 120_000);

  it('JSON nested 100,000 deep in one pull request\'s reviews, or a profile that is a list: that object fails, the import goes on', async () => {
    const { outcome, status, stored } = await importWith((harness) => {
      const pull = harness.fake.project.pulls[0]!.number;
      harness.fake.inject({ match: (request) => request.path.endsWith(`/pulls/${pull}/reviews`), times: Infinity, fault: { status: 200, text: `[{"id":1,"deep":${nested(100_000)}}]` } });
      harness.fake.inject({ match: (request) => /\/users\/[^/]+$/.test(request.path), times: 1, fault: { status: 200, body: [] } });
    });
    expect(outcome).toBe('synced');
    const pull = h!.fake.project.pulls[0]!.number;
    expect(status.failures).toContainEqual({ type: 'pull_request_review', id: String(pull), error: expect.stringMatching(/item 1 nests deeper than 64 levels/) });
    expect(status.failures).toContainEqual({ type: 'user', id: expect.any(String), error: expect.stringMatching(/the answer is an array, not an object/) });
    expect(stored.some((row) => row.type === 'pull_request_review' && row.key === '1')).toBe(false);
  }, 120_000);
});
