import { hostname } from 'node:os';
import { opendir, stat } from 'node:fs/promises';
import { join } from 'node:path';
import type { Logger } from '../logging/logger.js';
import type { ShardRepository } from './store/shards.js';

export interface MembershipOptions {
  shards: ShardRepository;
  shardId: string;
  /** The storage root this worker owns. */
  dataDir: string;
  /** Where the mirrors are (their size is reported with the heartbeat). */
  mirrorsDir: string;
  heartbeatMs: number;
  logger: Logger;
  /** Where this worker answers forwarded reads (its internal endpoint), when it runs one. */
  endpoint?: string;
  /** The shard's janitor (copies of sources moved away), run every JANITOR_EVERY_MS. */
  sweep?: () => Promise<unknown>;
}

/** How often the janitor looks for copies of moved sources. */
const JANITOR_EVERY_MS = 10 * 60_000;

/** The mirrors' size is walked at most this often (a large shard has many files); beats in between report the last one. */
const SIZE_EVERY_MS = 60_000;

/** How a shard row names the worker process holding it: `host:pid`. */
function nodeOf(host: string, pid: number): string {
  return `${host}:${pid}`;
}

/** The host of a shard row's node (see nodeOf): all before the last colon, or the whole string when it has none. */
export function nodeHostOf(node: string): string {
  const colon = node.lastIndexOf(':');
  return colon === -1 ? node : node.slice(0, colon);
}

/**
 * A worker's membership of its storage shard: registers the shard on start
 * (and places the sources added while no shard was active), then
 * heartbeats it with the size of its mirrors until stopped.
 */
export class ShardMembership {
  #timer: NodeJS.Timeout | undefined;
  #janitor: NodeJS.Timeout | undefined;
  #sweeping: Promise<unknown> | undefined;
  #beating: Promise<void> | undefined;
  #bytes = { value: 0, at: -Infinity };

  /** This worker as the shard row names it (written at register and with every beat, see ShardRepository.heartbeat). */
  readonly #node = nodeOf(hostname(), process.pid);

  constructor(private readonly options: MembershipOptions) {}

  /** Registers the shard and places the unplaced sources; returns the ids of those placed. */
  async start(): Promise<number[]> {
    const { shards, shardId, dataDir, logger, endpoint } = this.options;
    await shards.register({ id: shardId, node: this.#node, dataDir, ...(endpoint !== undefined ? { endpoint } : {}) });
    const placed = await shards.placeUnplaced();
    logger.info({ event: 'shard_registered', shard: shardId, placed: placed.length, ...(endpoint !== undefined ? { endpoint } : {}) }, `serving shard ${shardId}${placed.length > 0 ? ` (placed ${placed.length} unplaced sources)` : ''}`);
    this.#timer = setInterval(() => void this.#beat(), this.options.heartbeatMs);
    this.#timer.unref();
    void this.#beat();
    const { sweep } = this.options;
    if (sweep) {
      this.#janitor = setInterval(() => {
        this.#sweeping ??= sweep()
          .catch((error: unknown) => logger.warn({ event: 'shard_janitor_failed', shard: shardId, err: String(error) }, 'shard janitor failed'))
          .finally(() => (this.#sweeping = undefined));
      }, JANITOR_EVERY_MS);
      this.#janitor.unref();
    }
    return placed;
  }

  async stop(): Promise<void> {
    clearInterval(this.#timer);
    clearInterval(this.#janitor);
    this.#timer = this.#janitor = undefined;
    await Promise.all([this.#beating, this.#sweeping]);
  }

  #beat(): Promise<void> {
    this.#beating ??= (async () => {
      try {
        // The beat first: a walk of a large shard's mirrors must not make it late.
        const { endpoint } = this.options;
        await this.options.shards.heartbeat({ id: this.options.shardId, bytes: this.#bytes.value, worker: { node: this.#node, ...(endpoint !== undefined ? { endpoint } : {}) } });
        // The mirrors and the LFS objects (the lfs module keeps them in <dataDir>/lfs) count alike.
        if (Date.now() - this.#bytes.at >= SIZE_EVERY_MS) this.#bytes = { value: (await directoryBytes(this.options.mirrorsDir)) + (await directoryBytes(join(this.options.dataDir, 'lfs'))), at: Date.now() };
      } catch (error) {
        this.options.logger.warn({ event: 'shard_heartbeat_failed', shard: this.options.shardId, err: String(error) }, 'shard heartbeat failed');
      } finally {
        this.#beating = undefined;
      }
    })();
    return this.#beating;
  }
}

/** The bytes of the files under `dir` (0 when it does not exist). */
async function directoryBytes(dir: string): Promise<number> {
  let total = 0;
  let handle;
  try {
    handle = await opendir(dir);
  } catch {
    return 0;
  }
  for await (const entry of handle) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) total += await directoryBytes(path);
    else if (entry.isFile()) total += (await stat(path).catch(() => ({ size: 0 }))).size;
  }
  return total;
}
