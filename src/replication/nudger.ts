import { urlHost } from '../git/url.js';
import type { JobTransport } from '../jobs/types.js';
import type { RegistryRepository } from './store/registry.js';
import { SourceNotFoundError } from '../store/errors.js';
import type { SourceRepository } from './store/sources.js';
import type { Source, SyncTrigger } from '../store/types.js';

/** The job kinds of the replication module. */
export const SYNC_JOB = 'sync';
export const VERIFY_JOB = 'verify';

export interface NudgerOptions {
  jobs: Pick<JobTransport, 'shared' | 'enqueue'>;
  sources: Pick<SourceRepository, 'findByIds' | 'place'>;
  registry: Pick<RegistryRepository, 'request'>;
  /** See ReplicationOptions.placeSource. */
  placeSource?: (name: string) => Promise<string | null>;
}

/** The source fields a nudge needs. */
export type NudgedSource = Pick<Source, 'id' | 'name' | 'url' | 'shard'> & { moveTo?: string | null };

/**
 * Hands a source's work to a worker: a job on its shard's queue (the shard
 * it is moving to, while it moves). Jobs are nudges: the request they
 * stand for is in the registry already.
 */
export class Nudger {
  constructor(private readonly options: NudgerOptions) {}

  /**
   * Queues a job for the source's shard. A source not placed yet is placed
   * now; when no shard is active it gets no job on a shared transport (no
   * worker would take it): its request stays recorded, and the scheduler
   * nudges it once a shard registers (which places it).
   */
  async nudge(source: NudgedSource, trigger: SyncTrigger, kind = SYNC_JOB): Promise<void> {
    const { placeSource, jobs } = this.options;
    // A source on the move is synced by the shard it moves to (see SyncService).
    let shard = source.moveTo ?? source.shard;
    if (shard === null && placeSource) {
      shard = await placeSource(source.name);
      if (shard !== null) shard = await this.options.sources.place(source.id, shard);
      if (shard === null && jobs.shared) return;
    }
    await jobs.enqueue({ kind, key: String(source.id), payload: { trigger }, fairness: urlHost(source.url), ...(shard !== null ? { shard } : {}) });
  }

  /**
   * Nudges a worker for each of the sources `ids` (just placed on a shard),
   * first recording a request when `trigger` is given (a move must sync even
   * a source with nothing to fetch); one gone meanwhile is skipped.
   */
  async nudgeMany(ids: readonly number[], trigger?: SyncTrigger): Promise<void> {
    if (trigger) {
      for (const id of ids) {
        try {
          await this.options.registry.request(id, trigger);
        } catch (error) {
          if (!(error instanceof SourceNotFoundError)) throw error;
        }
      }
    }
    // Read a few hundred a statement: a drain nudges every source of a shard.
    for (const source of await this.options.sources.findByIds(ids)) await this.nudge(source, trigger ?? 'schedule');
  }
}

/**
 * How many more sync jobs the workers have room for (twice their capacity,
 * less those running and queued). With jobs routed by shard, each live
 * shard's queue counts on its own: a backlog on one shard leaves the
 * others' room alone, and a process that runs no worker (the scheduler)
 * still sees the workers' room.
 */
export async function syncRoom(jobs: Pick<JobTransport, 'load'>, liveShards: (() => Promise<string[]>) | undefined): Promise<number> {
  const loads = liveShards ? await Promise.all((await liveShards()).map((shard) => jobs.load(SYNC_JOB, { shard }))) : [await jobs.load(SYNC_JOB)];
  return loads.reduce((room, load) => room + Math.max(0, 2 * load.capacity - load.running - load.queued), 0);
}
