import { collectDefaultMetrics, Registry } from 'prom-client';
import { openJobTransport } from '../jobs/open.js';
import type { JobTransport } from '../jobs/types.js';
import type { LeaseManager } from '../leases/manager.js';
import { leaseMetrics } from '../leases/metrics.js';
import { readinessMetric } from './metrics.js';
import { openLeaseManager } from '../leases/open.js';
import type { Logger } from '../logging/logger.js';
import { openDatabase, pingDatabase, type Database } from '../store/database.js';
import { DEFAULT_POOL } from '../store/connect.js';
import type { SessionLimits } from '../util/database-sessions.js';
import type { ForgesyncModule } from './module.js';

export interface KernelOptions {
  databaseUrl: string;
  leaseUrl: string;
  /** Unset: in-process jobs. */
  jobsUrl: string | undefined;
  /** Lock duration of shared job queues (how soon a dead worker's job is run elsewhere): the lease ttl. */
  leaseTtlMs: number;
  /** The PostgreSQL registry's pool (unset: 10 connections, 5 s wait). */
  databasePoolSize?: number;
  databasePoolWaitMs?: number;
  /** Limits of every database session (registry and lease store; see SessionLimits). Unset: the servers' own. */
  databaseIdleInTransactionTimeoutMs?: number;
  databaseLockTimeoutMs?: number;
  databaseStatementTimeoutMs?: number;
  /** The storage shard this process's workers serve (jobs of sharded kinds go to their shard's workers). */
  shardId?: string;
  logger: Logger;
}

/**
 * What every module runs on: the registry database, the lease manager, the
 * job transport, the logger and the metrics registry — and the modules
 * themselves, whose job handlers it registers, whose background work it
 * starts and stops, in order.
 */
export class Kernel {
  readonly modules: ForgesyncModule[] = [];
  /** Prometheus registry of this instance (one per instance, so several in one process never collide). */
  readonly metrics = new Registry();
  #started = false;
  #serving = false;
  #closing: Promise<void> | undefined;

  private constructor(
    readonly database: Database,
    readonly leases: LeaseManager,
    readonly jobs: JobTransport,
    readonly logger: Logger,
  ) {
    // Here, not in a module: every process holds leases (workers most), whatever its roles.
    leaseMetrics(this.metrics, leases);
    readinessMetric(this.metrics, () => this.readiness());
  }

  /** Opens the database (migrating it), the lease backend and the job transport; closes what opened if one fails. */
  static async open(options: KernelOptions): Promise<Kernel> {
    const opened: { close(): Promise<void> }[] = [];
    try {
      const session = sessionLimitsOf(options);
      // The same limits for the lease store's pool when it is a database too.
      const limits = { ...(session ? { session } : {}), pool: { size: options.databasePoolSize ?? DEFAULT_POOL.size, waitMs: options.databasePoolWaitMs ?? DEFAULT_POOL.waitMs } };
      const database = await openDatabase(options.databaseUrl, limits);
      opened.push(database);
      const leases = await openLeaseManager(options.leaseUrl, limits);
      opened.push(leases);
      const jobs = await openJobTransport(options.jobsUrl, { logger: options.logger, lockMs: options.leaseTtlMs, ...(options.shardId !== undefined ? { shard: options.shardId } : {}) });
      return new Kernel(database, leases, jobs, options.logger);
    } catch (error) {
      for (const resource of opened.reverse()) await resource.close().catch(() => {});
      throw error;
    }
  }

  /** Adds a module: its job handlers are registered on the transport. */
  use<M extends ForgesyncModule>(module: M): M {
    for (const [kind, spec] of Object.entries(module.jobs ?? {})) this.jobs.handle(kind, spec);
    this.modules.push(module);
    return module;
  }

  /** Whether this process runs jobs (started as a worker): a process that does not only produces them. */
  get started(): boolean {
    return this.#started;
  }

  /**
   * Starts what `forgesync serve` runs besides HTTP: jobs here (`worker`)
   * and every module's background work, the schedulers (`scheduler`).
   */
  async start(roles: { worker: boolean; scheduler: boolean } = { worker: true, scheduler: true }): Promise<void> {
    if (this.#serving) return;
    this.#serving = true;
    if (roles.worker) {
      this.#started = true;
      await this.jobs.start();
    }
    if (roles.scheduler) for (const module of this.modules) module.start?.();
  }

  /** Also collects the process's own metrics (CPU, memory, event loop): only a serving process needs them. */
  collectProcessMetrics(): void {
    collectDefaultMetrics({ register: this.metrics, prefix: 'forgesync_' });
  }

  /** Whether the database and the lease backend answer; each is 'ok' or what failed. */
  async readiness(): Promise<{ database: string; leases: string }> {
    const checks = await Promise.allSettled([pingDatabase(this.database), this.leases.ping()]);
    const [database, leases] = checks.map((check) => (check.status === 'fulfilled' ? 'ok' : String((check.reason as Error)?.message ?? check.reason)));
    return { database: database!, leases: leases! };
  }

  /** Stops the modules (last added first), the job transport (aborting running jobs), then the leases and the database. */
  close(): Promise<void> {
    this.#closing ??= (async () => {
      for (const module of [...this.modules].reverse()) {
        await module.stop?.().catch((error: unknown) => this.logger.error({ event: 'module_stop_failed', module: module.name, err: String(error) }, `stopping ${module.name} failed`));
      }
      await this.jobs.close();
      await this.leases.close();
      await this.database.close();
    })();
    return this.#closing;
  }
}

/** The session limits the options give, or undefined when they give none (a caller of Kernel.open without the settings). */
function sessionLimitsOf(options: KernelOptions): SessionLimits | undefined {
  const { databaseIdleInTransactionTimeoutMs: idle, databaseLockTimeoutMs: lock, databaseStatementTimeoutMs: statement } = options;
  if (idle === undefined && lock === undefined && statement === undefined) return undefined;
  return { idleInTransactionTimeoutMs: idle ?? 0, lockTimeoutMs: lock ?? 0, statementTimeoutMs: statement ?? 0 };
}
