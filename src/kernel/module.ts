import type { JobKind } from '../jobs/types.js';

/**
 * A capability of forgesync (replication, snapshots, …) as the kernel sees
 * it: the job handlers it brings and its background work. The rest of what
 * a module is (its API, settings, routes, commands and dashboard pages) is
 * declared in module/definition.ts, which the kernel does not need.
 */
export interface ForgesyncModule {
  /** Short name for logs, e.g. `replication`. */
  readonly name: string;
  /** The job kinds this module runs, by kind. */
  readonly jobs?: Readonly<Record<string, JobKind>>;
  /** Starts background work (schedulers) in a serving process, after the job transport started. */
  start?(): void;
  /** Stops background work and lets go of what the module holds; called before the kernel closes. */
  stop?(): Promise<void>;
}
