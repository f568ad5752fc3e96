// The git side of bench/github-api.mjs: forgesync's copy gets the fake's real
// repository the way an import gets it — as a replication source mirrored
// over smart HTTP (`forgesync add`, then `forgesync sync --wait`, the CLI a
// user runs), named like the import and recorded as the import's repository
// source (what src/importer/run/sources.ts records after its first sync) —
// so `/contents` on the copy is read through the real path: the mirror's
// served view and its long-lived `cat-file` (git-data/mirror-git.ts).

import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const BIN = join(ROOT, 'bin/forgesync.js');
const { openDatabase } = await import(join(ROOT, 'dist/store/database.js'));

/** Runs the CLI with `env` (plus PATH and HOME); resolves with its stdout, rejects with its stderr on failure. */
function forgesync(args, env) {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [BIN, ...args], { env: { PATH: process.env.PATH, HOME: process.env.HOME, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    const out = [];
    const err = [];
    child.stdout.on('data', (chunk) => out.push(chunk));
    child.stderr.on('data', (chunk) => err.push(chunk));
    child.once('error', reject);
    child.once('exit', (code) => (code === 0 ? resolve(Buffer.concat(out).toString('utf8')) : reject(new Error(`forgesync ${args.join(' ')} exited ${code}: ${Buffer.concat(err).toString('utf8').trim()}`))));
  });
}

/**
 * Inputs: the data directory and store URL (the bench's), the import's name
 * and the fake's git URL. Mirrors the repository as source `name` (plain
 * http to 127.0.0.1 allowed for the fake) and records it as the import's
 * repository source. Resolves once the mirror's first sync is done.
 */
export async function mirrorForImport({ dataDir, databaseUrl, name, gitUrl }) {
  const env = { FORGESYNC_DATA_DIR: dataDir, FORGESYNC_GIT_PROTOCOLS: 'https,http', FORGESYNC_ALLOW_NETWORKS: '127.0.0.1', FORGESYNC_LOG_LEVEL: 'warn' };
  await forgesync(['add', '--name', name, '--interval', '7d', gitUrl], env);
  await forgesync(['sync', '--wait', '--timeout', '300', name], env);
  const database = await openDatabase(databaseUrl);
  try {
    await database.db.updateTable('imports').set({ repository_source: name }).where('name', '=', name).execute();
  } finally {
    await database.close();
  }
}
