import type { JobKind } from '../jobs/types.js';

/**
 * A capability of forgesync (replication, snapshots, …) as the kernel sees
 * it: the job handlers it brings and its background work. A module is
 * created by its own factory from the few things it needs (see each
 * module's `*Options`). What it offers beyond the kernel is declared where
 * that is used: HTTP routes in server/module-routes.ts, settings and CLI
 * commands in app/module-definition.ts.
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
