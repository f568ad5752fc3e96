import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Registry } from 'prom-client';
import type { GitRunner } from '../../git/runner.js';
import type { Logger } from '../../logging/logger.js';
import type { PackObjectsHook } from '../upload-pack.js';
import { PackCache } from './cache.js';
import { PackHookServer, type HookProgram } from './hook-server.js';
import { packCacheMetrics } from './metrics.js';
import { CloneResponses, type ResponseCommand } from './responses.js';

/*
 * The pack cache of one serving process: entries in a directory of its own,
 * `<dataDir>/pack-cache/<pid>-<random>` (entries live as long as the process:
 * a CLI command or a second server on the same data directory never touches
 * them, and the directories of processes that died are removed by the next
 * one to start), and the hooks' socket in a private temporary directory,
 * `forgesync-pack-<pid>-…` (a Unix socket path must stay under ~100 bytes,
 * which a data directory may not; also removed once its process died).
 */

export interface PackCacheSettings {
  dataDir: string;
  maxBytes: number;
  ttlMs: number;
  /** Longest one pack-objects may run (upload-pack's own limit). */
  generationTimeoutMs: number;
  /** The hook's program (default perl when it is there, else node; tests run both). */
  hookProgram?: HookProgram;
  /** How a whole clone's answer is generated (see responses.ts). */
  responseCommand: ResponseCommand;
}

/** An open pack cache: the hook upload-pack is started with, and its closing. */
export interface OpenPackCache {
  hook: PackObjectsHook;
  /** Whole clones' answers, from the same cache. */
  responses: CloneResponses;
  readonly cache: PackCache;
  /** Where this process's entries are. */
  readonly dir: string;
  close(): Promise<void>;
}

export async function openPackCache(settings: PackCacheSettings, services: { runner: GitRunner; metrics: Registry; logger: Logger }): Promise<OpenPackCache> {
  const root = join(settings.dataDir, 'pack-cache');
  mkdirSync(root, { recursive: true, mode: 0o700 });
  removeDeadProcessesDirs(root, /^(\d+)-[0-9a-f]+$/);
  const dir = join(root, `${process.pid}-${randomBytes(4).toString('hex')}`);
  mkdirSync(dir, { mode: 0o700 });
  const socketBase = tmpdir().length > 60 ? '/tmp' : tmpdir();
  removeDeadProcessesDirs(socketBase, /^forgesync-pack-(\d+)-\w+$/);
  // mkdtemp makes the directory 0700: only the service user may reach the socket.
  const socketDir = mkdtempSync(join(socketBase, `forgesync-pack-${process.pid}-`));
  const metrics = packCacheMetrics(services.metrics, () => cache.bytes);
  const { maxBytes, ttlMs, generationTimeoutMs } = settings;
  const cache = new PackCache({ dir, maxBytes, ttlMs, generationTimeoutMs, runner: services.runner, metrics, logger: services.logger });
  const removeFiles = () => {
    rmSync(dir, { recursive: true, force: true });
    rmSync(socketDir, { recursive: true, force: true });
  };
  let hooks: PackHookServer;
  try {
    hooks = await PackHookServer.listen(join(socketDir, 'hook.sock'), cache, metrics, settings.hookProgram);
  } catch (error) {
    cache.close();
    removeFiles();
    throw error;
  }
  return {
    hook: hooks,
    responses: new CloneResponses(cache, settings.responseCommand, metrics),
    cache,
    dir,
    close: async () => {
      cache.close();
      await hooks.close();
      removeFiles();
    },
  };
}

/** Removes the directories in `root` whose name (`pattern`, the pid its first group) says they belong to a process that no longer runs. */
function removeDeadProcessesDirs(root: string, pattern: RegExp): void {
  for (const name of readdirSync(root)) {
    const pid = pattern.exec(name)?.[1];
    if (pid === undefined || Number(pid) === process.pid || isRunning(Number(pid))) continue;
    try {
      rmSync(join(root, name), { recursive: true, force: true });
    } catch {
      // Another user's, or going away meanwhile: not ours to insist on.
    }
  }
}

function isRunning(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}
