import { existsSync, mkdtempSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { removeStaleDownloads } from '../../src/egress/download.js';

describe('removeStaleDownloads', () => {
  it('removes the temporary files of downloads not written to for the given time, and nothing else', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'forgesync-downloads-'));
    const old = new Date(Date.now() - 10 * 60_000);
    const files = { killed: '.download-a.tmp', live: '.download-b.tmp', stored: 'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855' };
    for (const name of Object.values(files)) writeFileSync(join(dir, name), 'x');
    utimesSync(join(dir, files.killed), old, old);
    utimesSync(join(dir, files.stored), old, old);
    expect(await removeStaleDownloads(dir, 5 * 60_000)).toBe(1);
    expect([files.killed, files.live, files.stored].map((name) => existsSync(join(dir, name)))).toEqual([false, true, true]);
    // A directory that does not exist yet has nothing to sweep.
    expect(await removeStaleDownloads(join(dir, 'none'), 1)).toBe(0);
  });
});
