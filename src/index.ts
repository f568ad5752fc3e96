/**
 * forgesync's library entry point.
 * @packageDocumentation
 */
export { openLeaseManager } from './leases/open.js';
export { LeaseManager, type LeaseAttempt } from './leases/manager.js';
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
export { loadConfig, type ForgesyncConfig } from './config/config.js';
