import pg from 'pg';
import { afterAll } from 'vitest';
import { postgresBackend } from './backends.js';
import { describeLeaseConformance } from './conformance.js';

const raw = new pg.Pool({ connectionString: postgresBackend.url, max: 1 });
afterAll(() => raw.end());

describeLeaseConformance(postgresBackend, {
  // Delete the row the way an operator with psql would.
  removeUnderneath: async (key) => void (await raw.query('DELETE FROM forgesync_leases WHERE key = $1', [key])),
});
