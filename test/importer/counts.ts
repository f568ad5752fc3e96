import type { ImportStatusJson } from '../../src/importer/status.js';
import { OBJECT_TYPES } from '../../src/importer/types.js';
import type { FakeGitHub } from '../fake-github/index.js';

// Kept apart from harness.ts (which opens forgesync) so that the cluster
// helpers compiled for the benches (tsconfig.fake.json) do not pull in the app.

/** An import's imported counts per public type, from its status. */
export function importedCounts(status: ImportStatusJson): Record<string, number> {
  return Object.fromEntries(OBJECT_TYPES.map((type) => [type, status.counts.imported[type]]));
}

/** What the fake says a complete import holds, per public type. */
export function expectedCounts(fake: FakeGitHub): Record<string, number> {
  const expected = fake.expected() as unknown as Record<string, number>;
  // Every collaborator as `affiliation=all` lists them (direct ones and organisation members with access), each once.
  return Object.fromEntries(OBJECT_TYPES.map((type) => [type, expected[type]!]));
}
