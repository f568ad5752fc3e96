#!/usr/bin/env node
// Part of `npm test`: the dashboard's end-to-end test drives Debian's chromium
// (never a browser download), so a fresh machine gets it here rather than by
// hand. Installs the `chromium` package with apt-get when /usr/bin/chromium
// is missing: directly as root, through passwordless sudo otherwise. Exits
// non-zero with the command to run when neither is possible.
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';

// The path is overridable for the script's own test only.
const CHROMIUM = process.env.FORGESYNC_CHROMIUM_PATH || '/usr/bin/chromium';

if (existsSync(CHROMIUM)) process.exit(0);

const asRoot = typeof process.getuid === 'function' && process.getuid() === 0;
const sudo = !asRoot && spawnSync('sudo', ['-n', 'true'], { stdio: 'ignore' }).status === 0;
if (!asRoot && !sudo) {
  process.stderr.write(
    `${CHROMIUM} is missing and this user cannot install packages; run: sudo apt-get update && sudo apt-get install -y chromium\n`,
  );
  process.exit(1);
}

const run = (args) => {
  const [command, ...rest] = sudo ? ['sudo', '-n', ...args] : args;
  execFileSync(command, rest, { stdio: 'inherit', env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' } });
};

process.stderr.write(`${CHROMIUM} is missing: installing Debian's chromium for the dashboard test\n`);
try {
  run(['apt-get', 'update']);
  run(['apt-get', 'install', '-y', '--no-install-recommends', 'chromium']);
} catch (error) {
  process.stderr.write(`installing chromium failed (${error.message}); run: apt-get update && apt-get install -y chromium\n`);
  process.exit(1);
}
if (!existsSync(CHROMIUM)) {
  process.stderr.write(`apt-get finished but ${CHROMIUM} is still missing\n`);
  process.exit(1);
}
