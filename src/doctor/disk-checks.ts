import { constants } from 'node:fs';
import { access, statfs } from 'node:fs/promises';
import { hostname } from 'node:os';
import { dirname } from 'node:path';
import { nodeHostOf } from '../cluster/membership.js';
import { formatBytes as bytes } from '../snapshots/errors.js';
import { fail, messageOf, ok, warn, type CheckContext, type CheckGroup, type CheckResult, type CheckStatus } from './types.js';

/** Space and inodes of one filesystem, as statfs gives them. */
interface DiskSpace {
  totalBytes: number;
  freeBytes: number;
  totalInodes: number;
  freeInodes: number;
}

/**
 * When a filesystem is too full. A sync writes a fetched pack before it can
 * drop anything, and a full repack writes the new packs beside the old ones
 * (up to the largest mirror again), so free space must stay well above
 * zero: below FAIL a big fetch or a repack fails midway; below WARN there is
 * room for today's work but not much growth. Mirrors are many small files
 * too, hence inodes. Absolute floors keep a huge volume honest, where a few
 * percent is still a lot of bytes.
 */
export const DISK_THRESHOLDS = {
  fail: { freeFraction: 0.05, freeBytes: 1024 ** 3, freeInodeFraction: 0.02 },
  warn: { freeFraction: 0.15, freeBytes: 10 * 1024 ** 3, freeInodeFraction: 0.1 },
} as const;

/** ok / warn / fail for `space` by DISK_THRESHOLDS, with the reason. */
export function diskStatus(space: DiskSpace): { status: CheckStatus; reason: string } {
  const freeFraction = space.totalBytes === 0 ? 0 : space.freeBytes / space.totalBytes;
  // Filesystems that do not count inodes (btrfs, some network ones) report 0 of 0.
  const inodeFraction = space.totalInodes === 0 ? 1 : space.freeInodes / space.totalInodes;
  for (const status of ['fail', 'warn'] as const) {
    const limit = DISK_THRESHOLDS[status];
    if (freeFraction < limit.freeFraction) return { status, reason: `under ${limit.freeFraction * 100}% free` };
    if (space.freeBytes < limit.freeBytes) return { status, reason: `under ${bytes(limit.freeBytes)} free` };
    if (inodeFraction < limit.freeInodeFraction) return { status, reason: `under ${limit.freeInodeFraction * 100}% of inodes free` };
  }
  return { status: 'ok', reason: '' };
}

/** The data directory's filesystem, and each storage shard's that lives on this machine (distributed mode). */
export const diskChecks: CheckGroup = {
  name: 'disk',
  async run({ config, registry }: CheckContext): Promise<CheckResult[]> {
    const results = [await diskCheck('disk:data-dir', config.dataDir)];
    if (registry.read === 'failed') return results;
    const here = hostname();
    for (const shard of registry.facts.shards) {
      const node = nodeHostOf(shard.node);
      if (node !== here) {
        results.push(ok(`disk:shard:${shard.id}`, `on ${node}, not this machine: run forgesync doctor there (its worker last reported ${new Date(shard.lastSeenAt).toISOString()})`));
      } else if (shard.dataDir !== config.dataDir) {
        results.push(await diskCheck(`disk:shard:${shard.id}`, shard.dataDir));
      } else {
        results.push(ok(`disk:shard:${shard.id}`, `its data dir is this one (${shard.dataDir}): see disk:data-dir`));
      }
    }
    return results;
  },
};

async function diskCheck(name: string, directory: string): Promise<CheckResult> {
  let space: DiskSpace;
  let measured = directory;
  try {
    ({ space, measured } = await spaceOf(directory));
  } catch (error) {
    return fail(name, `${directory} cannot be measured: ${messageOf(error)}`, 'check that the directory exists and that this user may read it');
  }
  const used = space.totalBytes === 0 ? 100 : Math.round((1 - space.freeBytes / space.totalBytes) * 100);
  const detail = `${directory}${measured === directory ? '' : ` (not created yet; measured ${measured})`}: ${bytes(space.freeBytes)} free of ${bytes(space.totalBytes)} (${used}% used)`;
  const writable = await access(measured, constants.W_OK).then(() => true, () => false);
  if (!writable) return fail(name, `${detail}; ${measured} is not writable by this user`, `give the user forgesync runs as write access to ${measured} (or point FORGESYNC_DATA_DIR elsewhere)`);
  const { status, reason } = diskStatus(space);
  const hint = `free space on that filesystem or move the data directory (FORGESYNC_DATA_DIR) to a larger one; forgesync needs at least ${bytes(DISK_THRESHOLDS.fail.freeBytes)} and ${DISK_THRESHOLDS.fail.freeFraction * 100}% free, ${bytes(DISK_THRESHOLDS.warn.freeBytes)} and ${DISK_THRESHOLDS.warn.freeFraction * 100}% to be comfortable`;
  if (status === 'ok') return ok(name, detail);
  return status === 'fail' ? fail(name, `${detail}; ${reason}`, hint) : warn(name, `${detail}; ${reason}`, hint);
}

/** statfs of `directory`, or of its nearest existing parent when it does not exist yet (serve creates it). */
async function spaceOf(directory: string): Promise<{ space: DiskSpace; measured: string }> {
  for (let at = directory; ; at = dirname(at)) {
    try {
      const stats = await statfs(at);
      // As df counts: what this user may still write (blocks reserved for root excluded) against what is used plus that.
      const usedBytes = (stats.blocks - stats.bfree) * stats.bsize;
      const freeBytes = stats.bavail * stats.bsize;
      const space = { totalBytes: usedBytes + freeBytes, freeBytes, totalInodes: stats.files, freeInodes: stats.ffree };
      return { space, measured: at };
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT' || dirname(at) === at) throw error;
    }
  }
}
