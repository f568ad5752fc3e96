import { afterEach, describe, expect, it } from 'vitest';
import { generateProject } from '../fake-github/index.js';
import { eventually } from '../support/harness.js';
import { credentialNames, expectedCounts, importedCounts, startImportHarness, type ImportHarness } from './harness.js';

/*
 * Issue 30 (a soak's finding): an import served by `forgesync serve` printed
 * a plain-text MaxListenersExceededWarning ("Possible EventTarget memory
 * leak detected. 11 abort listeners added to [AbortSignal]") at start-up:
 * its per-object jobs each listen on the job transport's one shutdown signal
 * (their lease, their waits), detaching when done. Many listeners on a
 * shared signal are the design there, and the warning is gone; an import
 * with many per-object jobs at once prints none.
 */
describe('an import whose per-object jobs run many at once', () => {
  let h: ImportHarness | undefined;
  const warnings: Error[] = [];
  const onWarning = (warning: Error) => warnings.push(warning);
  afterEach(async () => {
    process.off('warning', onWarning);
    await h?.close();
    h = undefined;
  });

  it('prints no MaxListenersExceededWarning', async () => {
    process.on('warning', onWarning);
    const project = generateProject({ issues: 40, pulls: 60, commentsPerIssue: 1, reviewsPerPull: 1, users: 10, seed: 30 });
    h = await startImportHarness({ fake: { project, latencyMs: 20 } });
    await h.app.startService();
    const record = await h.app.importer.create({ project: h.project, apiUrl: h.fake.apiUrl, credentials: credentialNames(1), concurrency: 20 });
    const status = await eventually(
      'the import to be synced',
      async () => {
        const current = await h!.app.importer.status(record.name);
        return current.state === 'synced' ? current : undefined;
      },
      60_000,
      100,
    );
    expect(importedCounts(status)).toEqual(expectedCounts(h.fake));
    expect(warnings.filter((warning) => warning.name === 'MaxListenersExceededWarning').map((warning) => warning.message)).toEqual([]);
  }, 90_000);
});
