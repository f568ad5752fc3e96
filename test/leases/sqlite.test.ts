import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { LeaseBackendUnavailableError, UnsupportedLeaseUrlError, openLeaseManager } from '../../src/index.js';
import { openSqliteFile, sqliteFilePath } from '../../src/util/sqlite-url.js';
import { sqliteBackend } from './backends.js';
import { describeLeaseConformance } from './conformance.js';

const sqlite = sqliteBackend();
describeLeaseConformance(sqlite, {
  // The rows carry the fences too: deleting them restarts the keys' fences from 1.
  resetStore: async (prefix) => {
    const db = openSqliteFile(sqliteFilePath(sqlite.url));
    try {
      db.prepare('DELETE FROM forgesync_leases WHERE substr(key, 1, length(?)) = ?').run(prefix, prefix);
    } finally {
      db.close();
    }
  },
});

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
