// Fixtures of bench/serve.mjs (not timed): forgesync's data directory with
// the sources synced through the library (as `forgesync sync` would), the
// environment `forgesync serve` runs with, and what a mirror's packs look like.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { pino } from 'pino';
import { Forgesync, loadConfig } from '../../dist/index.js';
import { createLogger } from '../../dist/logging/logger.js';
import { servedViewOf } from '../../dist/git/served-view.js';

/** The environment every forgesync process of the bench gets (library and `serve`). */
export function forgesyncEnv(root) {
  return {
    FORGESYNC_DATA_DIR: join(root, 'data'),
    FORGESYNC_GIT_PROTOCOLS: 'file,https',
    // The bench's LFS upstream listens on 127.0.0.1.
    FORGESYNC_ALLOW_NETWORKS: '127.0.0.0/8',
    // Nothing is synced behind the bench's back while it measures.
    FORGESYNC_SYNC_INTERVAL: '7d',
    FORGESYNC_VERIFY_INTERVAL: '7d',
  };
}

/**
 * Adds and syncs `sources` ({ name, url }) in a Forgesync opened on the
 * bench's data directory (SQLite), then closes it. A sync clones the mirror,
 * publishes its served view, runs housekeeping (repack with bitmaps) and
 * replicates LFS objects, all before it resolves. Resolves with each
 * source's mirror and served view.
 */
export async function syncSources(root, sources) {
  const config = loadConfig({ cwd: root, env: forgesyncEnv(root) });
  const logger = createLogger({ level: 'warn', destination: pino.destination({ dest: join(root, 'forgesync-setup.log'), sync: true }) });
  const app = await Forgesync.open(config, { logger });
  try {
    const out = {};
    for (const { name, url } of sources) {
      await app.replication.addSource({ name, url });
      const synced = await app.replication.sync(name);
      if (synced.registry.state !== 'synced' || !synced.served) {
        throw new Error(`source ${name} did not sync and serve: ${synced.registry.state} ${synced.registry.lastFailure ?? ''}`);
      }
      out[name] = { mirror: synced.registry.mirrorPath, view: servedViewOf(synced.registry.mirrorPath) };
    }
    return out;
  } finally {
    await app.close();
  }
}

/**
 * What upload-pack will find in `gitDir`: pack count, whether a pack bitmap
 * or a multi-pack index (and its bitmap) exist, a commit-graph, and the
 * alternates it borrows from (a served view borrows the mirror's objects).
 */
export function packState(gitDir) {
  const packDir = join(gitDir, 'objects', 'pack');
  const files = existsSync(packDir) ? readdirSync(packDir) : [];
  const alternates = join(gitDir, 'objects', 'info', 'alternates');
  return {
    packs: files.filter((f) => f.endsWith('.pack')).length,
    packBitmaps: files.filter((f) => f.endsWith('.bitmap') && f.startsWith('pack-')).length,
    midx: files.includes('multi-pack-index'),
    midxBitmap: files.some((f) => f.startsWith('multi-pack-index-') && f.endsWith('.bitmap')),
    commitGraph: existsSync(join(gitDir, 'objects', 'info', 'commit-graph')) || existsSync(join(gitDir, 'objects', 'info', 'commit-graphs')),
    alternates: existsSync(alternates) ? readFileSync(alternates, 'utf8').trim().split('\n') : [],
  };
}

/** One line describing packState. */
export function describePacks(state) {
  const parts = [`${state.packs} pack(s)`];
  parts.push(state.packBitmaps ? `${state.packBitmaps} pack bitmap(s)` : 'no pack bitmap');
  parts.push(state.midx ? `multi-pack-index${state.midxBitmap ? ' with bitmap' : ' without bitmap'}` : 'no multi-pack-index');
  parts.push(state.commitGraph ? 'commit-graph' : 'no commit-graph');
  if (state.alternates.length) parts.push(`alternates ${state.alternates.join(', ')}`);
  return parts.join(', ');
}
