import type { Cluster } from './module.js';

/** Reads forwarded to the worker holding a source's files, and relaying its answer (snapshots' need). */
export { ShardReads, relay } from './forward.js';

/**
 * What the rest of forgesync may ask of the cluster: the shards, moving
 * sources between them, where sources are placed (replication's need), where
 * their files are read (snapshots' need) and, for `forgesync serve`, a
 * worker joining its shard. Documented where implemented (module.ts).
 */
export type ClusterApi = Pick<Cluster, 'listShards' | 'reassignSource' | 'drainShard' | 'placement' | 'shardReads' | 'join'>;
