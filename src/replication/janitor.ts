import { readdir, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { removeMirror } from '../git/mirror.js';
import type { LeaseManager } from '../leases/manager.js';
import type { Logger } from '../logging/logger.js';
import type { SourceRepository } from './store/sources.js';
import { syncLeaseKey } from './sync.js';
import { ownerName } from '../leases/owner.js';

export interface JanitorOptions {
  mirrorsDir: string;
  sources: Pick<SourceRepository, 'findByIds'>;
  leases: LeaseManager;
  leaseTtlMs: number;
  logger: Logger;
  /** Told before a mirror is deleted, so that readers of it can let go. */
  onMirrorRemoved?: (mirrorPath: string) => void;
}

/** A mirror directory's source id: `<id>-<name>-<digest>.git` (see git/paths.ts). */
const MIRROR_DIR = /^(\d+)-.+\.git$/;

/**
 * The janitor of shard `localShard`: deletes the copies under `mirrorsDir`
 * of sources since moved to another shard, once untouched for `graceMs`
 * (readers of the old copy get that long), each under the source's lease.
 * A directory of an unknown or never-moved source is left alone: only a
 * move recorded in the registry (placement epoch above 0, placed elsewhere)
 * deletes anything. Returns the paths removed.
 */
export async function removeMovedCopies(options: JanitorOptions, run: { localShard: string; graceMs: number; now: number }): Promise<string[]> {
  const { mirrorsDir, leases, leaseTtlMs, logger } = options;
  const { localShard, graceMs, now } = run;
  const removed: string[] = [];
  // A source's directories (one per URL it had), then their sources in a few statements, not one a directory.
  const dirs = new Map<number, string[]>();
  for (const entry of await readdir(mirrorsDir).catch(() => [] as string[])) {
    const id = MIRROR_DIR.exec(entry)?.[1];
    if (id !== undefined) dirs.set(Number(id), [...(dirs.get(Number(id)) ?? []), entry]);
  }
  for (const source of await options.sources.findByIds([...dirs.keys()])) {
    if (source.placementEpoch === 0 || source.shard === null || source.shard === localShard || source.moveTo === localShard) continue;
    for (const entry of dirs.get(source.id)!) {
      const path = join(mirrorsDir, entry);
      const modified = (await stat(path).catch(() => undefined))?.mtimeMs;
      if (modified === undefined || now - modified < graceMs) continue;
      await leases.tryWithLease(syncLeaseKey(source.id), { ttlMs: leaseTtlMs, owner: ownerName(`janitor ${source.name}`) }, async () => {
        options.onMirrorRemoved?.(path);
        if (await removeMirror(mirrorsDir, source, source.url)) removed.push(path);
      });
    }
  }
  if (removed.length > 0) logger.info({ event: 'moved_copies_removed', shard: localShard, count: removed.length }, `removed ${removed.length} copies of sources moved off shard ${localShard}`);
  return removed;
}
