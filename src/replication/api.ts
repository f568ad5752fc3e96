import type { Replication } from './module.js';

/** What a source name may be (an import names its repository's and wiki's sources alike). */
export { validateSourceName } from './names.js';

/**
 * What the rest of forgesync (other modules, the CLI, the server, library
 * users) may ask of replication: sources and their mirrors, sync requests
 * and syncs, and the mirror-removed notification. Every method is
 * documented where it is implemented (module.ts).
 *
 * The verbs: `requestSync…` records a request (a worker serves it later) and
 * returns at once; `sync` runs it here, or waits for whoever runs it, until
 * served; `nudge` wakes workers for requests recorded already.
 */
export type ReplicationApi = Pick<
  Replication,
  | 'addSource'
  | 'updateSource'
  | 'removeSource'
  | 'getSource'
  | 'findSource'
  | 'listSources'
  | 'requestSync'
  | 'requestSyncMany'
  | 'requestSyncByIds'
  | 'nudge'
  | 'sync'
  | 'copyMirror'
  | 'removeMovedCopies'
  | 'onMirrorRemoved'
  | 'followSyncs'
  | 'followProjectDeliveries'
  | 'addStatusSection'
  | 'statusSections'
>;

export type { SyncFollower, SyncedMirror } from './sync.js';
export type { ProjectFollower } from './webhooks/project-followers.js';
export type { ProjectDelivery, ProjectTarget, ProjectTargetDetail } from './webhooks/github-project.js';
export type { SourceStatusSection } from './status-sections.js';

/**
 * Where sources are placed (the cluster module answers it): the storage
 * shard a new source goes to, and, where jobs are routed by shard, this
 * process's shard and the shards whose workers are alive.
 */
export interface SourcePlacement {
  /** The shard a new source goes to (null: none is active yet; it is placed when one registers). */
  choose(name: string): Promise<string | null>;
  /** Undefined when jobs are not routed by shard: every source is synced by whichever process runs its job. */
  readonly routed: { readonly localShard: string; live(): Promise<string[]> } | undefined;
}
