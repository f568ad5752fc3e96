import type { Logger } from '../logging/logger.js';
import type { SyncedMirror, SyncFollower } from './sync.js';

/** The work that follows syncs in this process (see SyncFollower), run in the order it was registered. */
export class SyncFollowers {
  readonly #followers = new Set<SyncFollower>();

  constructor(private readonly logger: Logger) {}

  /** Adds `follower`; the returned function removes it. */
  add(follower: SyncFollower): () => void {
    this.#followers.add(follower);
    return () => this.#followers.delete(follower);
  }

  /** Each follower in turn; one failing is logged and keeps neither the others nor the sync from finishing. */
  async run(synced: SyncedMirror, signal: AbortSignal): Promise<void> {
    for (const follower of this.#followers) {
      if (signal.aborted) return;
      try {
        await follower.afterSync(synced, signal);
      } catch (error) {
        const source = synced.source.name;
        this.logger.warn(
          { event: 'sync_follower_failed', follower: follower.name, source, err: String((error as Error)?.message ?? error) },
          `${follower.name} after the sync of ${source} failed; the next sync tries again`,
        );
      }
    }
  }
}
