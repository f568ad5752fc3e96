import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { credentialNames, expectedCounts, importedCounts, startImportHarness, type ImportHarness } from './harness.js';

describe.each(['sqlite', 'postgres'] as const)('GitHub import on %s', (database) => {
  let h: ImportHarness;

  beforeAll(async () => {
    h = await startImportHarness({ database });
  });
  afterAll(async () => h?.close());

  it('imports every object of the project, once', async () => {
    const record = await h.app.importer.create({ project: h.project, apiUrl: h.fake.apiUrl, credentials: credentialNames(1) });
    const { outcome } = await h.app.importer.runHere(record.name);
    const status = await h.app.importer.status(record.name);
    expect(status.failure).toBeNull();
    expect(outcome).toBe('synced');
    expect(importedCounts(status)).toEqual(expectedCounts(h.fake));
  });
});
