import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { LeaseBackendUnavailableError, UnsupportedLeaseUrlError, openLeaseManager } from '../../src/index.js';
import { sqliteBackend } from './backends.js';
import { describeLeaseConformance } from './conformance.js';

describeLeaseConformance(sqliteBackend());

describe('openLeaseManager', () => {
  it('rejects unknown or empty URLs with UnsupportedLeaseUrlError', async () => {
    await expect(openLeaseManager('zookeeper://localhost')).rejects.toBeInstanceOf(UnsupportedLeaseUrlError);
    await expect(openLeaseManager('')).rejects.toBeInstanceOf(UnsupportedLeaseUrlError);
    await expect(openLeaseManager('not a url')).rejects.toThrow(/not supported/);
  });

  it('reports an unusable SQLite file as an unavailable backend', async () => {
    const notADirectory = join(mkdtempSync(join(tmpdir(), 'forgesync-')), 'file');
    writeFileSync(notADirectory, 'x');
    await expect(openLeaseManager(`sqlite:${notADirectory}/leases.db`)).rejects.toBeInstanceOf(LeaseBackendUnavailableError);
  });
});
