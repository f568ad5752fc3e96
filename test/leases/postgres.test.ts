import pg from 'pg';
import { afterAll } from 'vitest';
import { postgresBackend } from './backends.js';
import { describeLeaseConformance } from './conformance.js';

const raw = new pg.Pool({ connectionString: postgresBackend.url, max: 1 });
afterAll(() => raw.end());

describeLeaseConformance(postgresBackend, {
  // Delete the row the way an operator with psql would.
  removeUnderneath: async (key) => void (await raw.query('DELETE FROM forgesync_leases WHERE key = $1', [key])),
  // The rows carry the fences too: deleting them restarts the keys' fences from 1.
  resetStore: async (prefix) =>
    void (await raw.query('DELETE FROM forgesync_leases WHERE left(key, length($1)) = $1', [prefix])),
});
