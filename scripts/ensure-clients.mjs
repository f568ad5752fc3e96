#!/usr/bin/env node
// Part of `npm test`: some tests drive real clients from Debian (never a
// download of their own): the dashboard tests Debian's chromium, the LFS
// tests git-lfs, the GitHub-compatible API's tests PyGithub and the gh CLI
// (behind a TLS front whose throwaway certificates openssl makes), the alert rules' tests promtool (Debian's prometheus).
// A fresh machine gets the missing ones here rather than by
// hand, with one apt-get install: directly as root, through passwordless
// sudo otherwise. Exits non-zero with the command to run when neither is
// possible or the install did not produce them.
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';

// Each client: the file its tests use and the Debian package that has it.
// FORGESYNC_CLIENTS_ROOT is prefixed to every path, for the script's own test only.
const ROOT = process.env.FORGESYNC_CLIENTS_ROOT || '';
const CLIENTS = [
  { path: '/usr/bin/chromium', pkg: 'chromium' },
  { path: '/usr/bin/git-lfs', pkg: 'git-lfs' },
  { path: '/usr/lib/python3/dist-packages/github/__init__.py', pkg: 'python3-github' },
  { path: '/usr/bin/gh', pkg: 'gh' },
  { path: '/usr/bin/openssl', pkg: 'openssl' },
  { path: '/usr/bin/promtool', pkg: 'prometheus' },
].map((client) => ({ ...client, path: `${ROOT}${client.path}` }));

const missing = CLIENTS.filter((client) => !existsSync(client.path));
if (missing.length === 0) process.exit(0);
const packages = missing.map((client) => client.pkg);
const command = `apt-get update && apt-get install -y --no-install-recommends ${packages.join(' ')}`;

const asRoot = typeof process.getuid === 'function' && process.getuid() === 0;
const sudo = !asRoot && spawnSync('sudo', ['-n', 'true'], { stdio: 'ignore' }).status === 0;
if (!asRoot && !sudo) {
  process.stderr.write(`${missing.map((client) => client.path).join(', ')} missing and this user cannot install packages; run: sudo ${command}\n`);
  process.exit(1);
}

const run = (args) => {
  const [program, ...rest] = sudo ? ['sudo', '-n', ...args] : args;
  execFileSync(program, rest, { stdio: 'inherit', env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' } });
};

process.stderr.write(`installing Debian's ${packages.join(', ')} for the tests that drive them\n`);
try {
  run(['apt-get', 'update']);
  run(['apt-get', 'install', '-y', '--no-install-recommends', ...packages]);
} catch (error) {
  process.stderr.write(`installing ${packages.join(', ')} failed (${error.message}); run: ${command}\n`);
  process.exit(1);
}
const still = missing.filter((client) => !existsSync(client.path));
if (still.length > 0) {
  process.stderr.write(`apt-get finished but ${still.map((client) => client.path).join(', ')} is still missing\n`);
  process.exit(1);
}
