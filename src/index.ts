/**
 * forgesync's library entry point.
 * @packageDocumentation
 */
export { openLeaseManager } from './leases/open.js';
export { LeaseManager, type LeaseAttempt, type LeaseRun, type LeaseWork } from './leases/manager.js';
export { writeFenced } from './leases/fenced.js';
export { Lease } from './leases/lease.js';
export * from './leases/errors.js';
export type {
  LeaseOwner,
  LeaseHolder,
  LeaseRequest,
  WaitingLeaseRequest,
  ScopedLeaseRequest,
  ForceReleaseOptions,
  LeaseStore,
} from './leases/types.js';
export { loadConfig, type ForgesyncConfig } from './app/config.js';
export { ConfigError } from './config/errors.js';
export { Forgesync, type AddSourceInput, type ResyncTarget } from './app/forgesync.js';
export * from './errors.js';
export { SourceNotFoundError, SourceExistsError, DatabaseUnavailableError, DatabaseMigrationError, UnsupportedDatabaseUrlError } from './store/errors.js';
export type { SyncOutcome } from './replication/sync.js';
export type { Job, JobHandler, JobKind, JobLoad, JobTransport, JobPayload } from './jobs/types.js';
export { openJobTransport } from './jobs/open.js';
export * from './jobs/errors.js';
export { Kernel } from './kernel/kernel.js';
export type { ForgesyncModule } from './kernel/module.js';
export type { ModuleDefinition, ModuleServices, OpenedModule } from './module/definition.js';
export type { ModuleApis } from './app/compose.js';
export type { RouteContext } from './server/module-routes.js';
export type { ReplicationApi, SourcePlacement } from './replication/api.js';
export type { SyncWaitResult } from './replication/options.js';
export type { SnapshotsApi } from './snapshots/api.js';
export type { ImporterApi } from './importer/api.js';
export type { FeedsApi } from './feeds/api.js';
export type { LfsApi, LfsFsckReport, LfsObjectRow, LfsObjectState, LfsPruneReport, LfsSummary } from './lfs/api.js';
export type { ClusterApi } from './cluster/api.js';
export type { Source, RegistryRow, RegistryState, SourceWithRegistry, SyncAttempt, SyncTrigger } from './store/types.js';
export * from './git/errors.js';
export { CredentialRedirectError, EgressLookupError, EgressNetworkError, EgressRefusedError, EgressTimeoutError } from './egress/errors.js';
export { EgressPolicy, type EgressPolicyOptions } from './egress/policy.js';
export { InvalidSourceNameError } from './replication/names.js';
export { InvalidScheduleError } from './replication/schedule.js';
export * from './credentials/errors.js';
export { CredentialStore, validateCredentialName, type BoundToken, type Credential } from './credentials/store.js';
export { backoffDelay, DEFAULT_BACKOFF, type BackoffPolicy } from './util/backoff.js';
export { Snapshot, type SnapshotJson } from './snapshots/snapshot.js';
export type { OpenSnapshotOptions, ObjectAt } from './snapshots/service.js';
export type { SnapshotEntry } from './snapshots/cache.js';
export type { TreeEntry } from './git/cat-file.js';
export { resolveInside } from './snapshots/paths.js';
export * from './snapshots/errors.js';
export type { AddFeedInput, DeadLetter } from './feeds/module.js';
export type { FeedStatus } from './feeds/status.js';
export type { CloudEvent } from './feeds/events.js';
export * from './feeds/errors.js';
export { FileSinkOutsideRootError, UnsupportedSinkUrlError } from './feeds/sinks/errors.js';
export type { FeedSink, DeliveryOutcome, SinkOptions } from './feeds/sinks/types.js';
