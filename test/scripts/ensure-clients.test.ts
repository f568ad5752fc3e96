import { execFileSync, spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const SCRIPT = join(ROOT, 'scripts/ensure-clients.mjs');

/**
 * A fresh machine has none of chromium, git-lfs, PyGithub, gh or openssl; the README's
 * test command must install them (the dashboard, LFS and GitHub-compatible
 * API tests drive them) instead of failing. The script is run with a stub apt-get first on PATH that
 * records its arguments and "installs" each package by creating the file the
 * script looks for.
 */
describe('npm test on a machine without the clients the tests drive', () => {
  it('runs the client check before the suite, and .ci/run goes through npm test', () => {
    const scripts = (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { scripts: Record<string, string> }).scripts;
    expect(scripts.test!.startsWith('node scripts/ensure-clients.mjs && ')).toBe(true);
    expect(scripts.test).toMatch(/vitest run$/);
    expect(readFileSync(join(ROOT, '.ci/run'), 'utf8')).toMatch(/^npm test$/m);
  });

  it('installs the missing packages, in one apt-get install', () => {
    const dir = mkdtempSync(join(tmpdir(), 'forgesync-clients-'));
    const root = join(dir, 'root');
    const files = ['/usr/bin/chromium', '/usr/bin/git-lfs', '/usr/lib/python3/dist-packages/github/__init__.py', '/usr/bin/gh', '/usr/bin/openssl', '/usr/bin/promtool'].map((file) => join(root, file));
    const calls = join(dir, 'calls');
    const install = files.map((file) => `mkdir -p ${dirname(file)} && touch ${file}`).join(' && ');
    for (const tool of ['apt-get', 'sudo']) {
      const body =
        tool === 'sudo'
          ? '#!/bin/sh\n[ "$1" = -n ] && shift\n[ "$1" = true ] && exit 0\nexec "$@"\n'
          : `#!/bin/sh\necho "$@" >> ${calls}\n[ "$1" = install ] && ${install}\nexit 0\n`;
      writeFileSync(join(dir, tool), body);
      chmodSync(join(dir, tool), 0o755);
    }
    const env = { ...process.env, PATH: `${dir}:${process.env.PATH}`, FORGESYNC_CLIENTS_ROOT: root };
    execFileSync(process.execPath, [SCRIPT], { env, stdio: 'pipe' });
    expect(files.every((file) => existsSync(file))).toBe(true);
    expect(readFileSync(calls, 'utf8').trim().split('\n')).toEqual(['update', 'install -y --no-install-recommends chromium git-lfs python3-github gh openssl prometheus']);
    // Present now: nothing more is installed.
    execFileSync(process.execPath, [SCRIPT], { env, stdio: 'pipe' });
    expect(readFileSync(calls, 'utf8').trim().split('\n')).toHaveLength(2);
  });

  it('fails with the command to run when the install does not produce the browser', () => {
    const dir = mkdtempSync(join(tmpdir(), 'forgesync-clients-'));
    writeFileSync(join(dir, 'apt-get'), '#!/bin/sh\nexit 0\n');
    writeFileSync(join(dir, 'sudo'), '#!/bin/sh\n[ "$1" = -n ] && shift\n[ "$1" = true ] && exit 0\nexec "$@"\n');
    chmodSync(join(dir, 'apt-get'), 0o755);
    chmodSync(join(dir, 'sudo'), 0o755);
    const result = spawnSync(process.execPath, [SCRIPT], {
      env: { ...process.env, PATH: `${dir}:${process.env.PATH}`, FORGESYNC_CLIENTS_ROOT: join(dir, 'never') },
      encoding: 'utf8',
    });
    expect(result.status).toBe(1);
    expect(result.stderr).toContain('is still missing');
  });
});
