import { execFile } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LOOPBACK_NETWORKS } from '../support/egress.js';
import { removeTempDirs, tempDir } from '../support/git-fixtures.js';
import { testSecret } from '../support/secrets.js';
import { commitFiles, lfsRepository, secretsFile } from './fixtures.js';
import { LfsUpstream, testObject } from './lfs-upstream.js';

/* `forgesync lfs fsck` and `forgesync lfs missing`, as an operator runs them (the built CLI). */

const CLI = fileURLToPath(new URL('../../bin/forgesync.js', import.meta.url));
const run = promisify(execFile);

describe('forgesync lfs', () => {
  const token = testSecret('LFS_CLI_UPSTREAM_TOKEN');
  const kept = testObject(900);
  const gone = testObject(901);
  const dataDir = mkdtempSync(join(tmpdir(), 'forgesync-lfs-cli-'));
  let upstream: LfsUpstream;
  let env: NodeJS.ProcessEnv;

  async function forgesync(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
    try {
      const { stdout, stderr } = await run(process.execPath, [CLI, ...args], { env });
      return { code: 0, stdout, stderr };
    } catch (error) {
      const failed = error as { code: number; stdout: string; stderr: string };
      return { code: failed.code, stdout: failed.stdout, stderr: failed.stderr };
    }
  }

  beforeAll(async () => {
    const root = tempDir();
    upstream = await LfsUpstream.start(root, token);
    upstream.objects.set(kept.oid, kept);
    commitFiles(lfsRepository(root, 'pics'), { 'kept.bin': kept, 'gone.bin': gone });
    env = {
      ...process.env,
      FORGESYNC_DATA_DIR: dataDir,
      FORGESYNC_GIT_PROTOCOLS: 'https,ssh,http',
      FORGESYNC_ALLOW_NETWORKS: LOOPBACK_NETWORKS,
      FORGESYNC_SECRETS_FILE: secretsFile(token, [upstream.forgeUrl]),
    };
    expect((await forgesync('add', `${upstream.forgeUrl}/pics.git`, '--name', 'pics', '--credential', 'lfs_bot')).code).toBe(0);
    expect((await forgesync('sync', 'pics', '--wait')).code).toBe(0);
  });

  afterAll(async () => {
    await upstream?.close();
    removeTempDirs();
  });

  it('lists the objects not stored, with why', async () => {
    const missing = await forgesync('lfs', 'missing', 'pics', '--json');
    expect(missing.code).toBe(0);
    expect(JSON.parse(missing.stdout)).toMatchObject([{ oid: gone.oid, size: gone.size, state: 'missing' }]);
  });

  it('fsck passes on whole objects and fails (exit 1) naming a damaged one', async () => {
    const clean = await forgesync('lfs', 'fsck', 'pics', '--json');
    expect(clean.code).toBe(0);
    expect(JSON.parse(clean.stdout)).toEqual({ name: 'pics', checked: 1, ok: 1, damaged: [], absent: [] });
    writeFileSync(join(dataDir, 'lfs', 'objects', kept.oid.slice(0, 2), kept.oid.slice(2, 4), kept.oid), Buffer.alloc(kept.size));
    const damaged = await forgesync('lfs', 'fsck', 'pics');
    expect(damaged.code).toBe(1);
    expect(damaged.stdout).toContain(`damaged\t${kept.oid}`);
  });

  it('names an unknown source', async () => {
    const unknown = await forgesync('lfs', 'fsck', 'nope');
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toContain('nope');
  });
});
