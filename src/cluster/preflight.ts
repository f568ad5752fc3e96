import { SharedBackendsRequiredError } from './errors.js';
import { isDistributed, rolesText, type Roles } from './roles.js';

/** The backends a process is configured with (URLs as configured; jobs undefined for in-process). */
export interface Backends {
  databaseUrl: string;
  leaseUrl: string;
  jobsUrl: string | undefined;
  /** FORGESYNC_CLUSTER_TOKEN; an api forwards file reads to workers with it. */
  clusterToken?: string | undefined;
}

/**
 * Refuses to run only some roles on backends other processes cannot share:
 * an api process would record requests no worker ever sees (in-process
 * jobs), a worker would sync sources no scheduler knows of (a SQLite file);
 * and api and worker processes need the cluster token to reach each other.
 */
export function requireSharedBackends(roles: Roles, backends: Backends): void {
  if (!isDistributed(roles)) return;
  const missing: string[] = [];
  if (/^sqlite:/i.test(backends.databaseUrl)) missing.push('the registry is the embedded SQLite file: set FORGESYNC_DATABASE_URL=postgres://…');
  if (/^sqlite:/i.test(backends.leaseUrl)) missing.push('leases are in a SQLite file: set FORGESYNC_LEASE_URL=redis://… (or postgres://…)');
  if (backends.jobsUrl === undefined) missing.push('jobs run in-process: set FORGESYNC_JOBS_URL=redis://… for BullMQ');
  // A scheduler alone reads no files; api and worker processes talk to each other for reads.
  if ((roles.api || roles.worker) && backends.clusterToken === undefined) {
    missing.push("api processes forward snapshot and contents reads to the worker of the source's shard: set FORGESYNC_CLUSTER_TOKEN to one shared secret (at least 16 characters) on every api and worker");
  }
  if (missing.length > 0) throw new SharedBackendsRequiredError(rolesText(roles), missing);
}
