import { randomBytes } from 'node:crypto';
import { mkdirSync, readdirSync, rmSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { readJsonFile, writeJsonFile } from './json-file.js';

/** A reader's claim on a snapshot: while live, the snapshot is never evicted. */
export interface SnapshotHold {
  handle: string;
  source: string;
  /** Directory name of the source's snapshots. */
  sourceDir: string;
  sha: string;
  owner: string;
  pid: number;
  host: string;
  createdAt: string;
  /** When the hold lapses (CLI and API holds); null: while process `pid` lives (library holds). */
  expiresAt: string | null;
  /**
   * The API caller (`callerOf`, a non-secret id of its token) that made the hold:
   * only that caller sees and releases it through the API. Absent for CLI,
   * library and internal holds, which no API caller can see or release.
   */
  creator?: string;
  /**
   * Absent for a reader's hold. `making`: the snapshot is being materialised by
   * process `pid` (process-bound, so a crash cannot leave it behind); it carries
   * the snapshot's `bytes` so the budget counts them before the cache record
   * exists, and is replaced by the reader's hold once the snapshot is complete.
   * `base`: linked from while another commit is derived; it ends with that
   * request, so the budget does not count it.
   */
  purpose?: 'making' | 'base';
  /** For `making`: the bytes the snapshot will take, measured from git before it is written. */
  bytes?: number;
}

const HOLDS_DIR = '.holds';
const HANDLE = /^[0-9a-f]{20}$/;

/**
 * Hold records, one small JSON file each under `<root>/.holds/`. Snapshots are
 * files on this machine's disk, so their holds live beside them rather than in
 * a registry other machines share. Writes happen under the snapshot's lease
 * (see SnapshotCache), so a hold and an eviction never cross.
 */
export class HoldFiles {
  readonly #dir: string;

  constructor(root: string) {
    this.#dir = join(root, HOLDS_DIR);
  }

  /** Records a new hold and returns it. */
  add(input: Omit<SnapshotHold, 'handle' | 'pid' | 'host' | 'createdAt'>): SnapshotHold {
    mkdirSync(this.#dir, { recursive: true });
    const hold: SnapshotHold = {
      handle: randomBytes(10).toString('hex'),
      ...input,
      pid: process.pid,
      host: hostname(),
      createdAt: new Date().toISOString(),
    };
    writeJsonFile(this.#file(hold.handle), hold);
    return hold;
  }

  /** The hold with this handle, or undefined (also for malformed handles). */
  find(handle: string): SnapshotHold | undefined {
    return HANDLE.test(handle) ? readJsonFile<SnapshotHold>(this.#file(handle)) : undefined;
  }

  /** Deletes a hold; true when it existed. */
  remove(handle: string): boolean {
    if (!HANDLE.test(handle)) return false;
    try {
      rmSync(this.#file(handle));
      return true;
    } catch {
      return false;
    }
  }

  /** Every hold still live; lapsed ones are deleted on the way. */
  live(now = Date.now()): SnapshotHold[] {
    let names: string[];
    try {
      names = readdirSync(this.#dir);
    } catch {
      return [];
    }
    const live: SnapshotHold[] = [];
    for (const name of names) {
      if (!name.endsWith('.json')) continue;
      const hold = this.find(name.slice(0, -'.json'.length));
      if (!hold) continue;
      if (isLive(hold, now)) live.push(hold);
      else this.remove(hold.handle);
    }
    return live;
  }

  #file(handle: string): string {
    return join(this.#dir, `${handle}.json`);
  }
}

/** Live: not expired; for process-bound holds, the process still runs (on another host we cannot tell: live). */
export function isLive(hold: SnapshotHold, now = Date.now()): boolean {
  if (hold.expiresAt !== null) return Date.parse(hold.expiresAt) > now;
  if (hold.host !== hostname()) return true;
  try {
    process.kill(hold.pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}
