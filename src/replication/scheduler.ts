import { startHeartbeat } from '../leases/heartbeat.js';
import type { Lease } from '../leases/lease.js';
import type { LeaseManager } from '../leases/manager.js';
import type { JobTransport, SyncTrigger } from '../jobs/transport.js';
import { urlHost } from '../git/url.js';
import type { Logger } from '../logging/logger.js';
import type { RegistryRepository } from '../store/registry.js';
import type { SourceWithRegistry } from '../store/types.js';
import { nextCronRun } from './schedule.js';
import { syncLeaseKey } from './sync.js';

export interface SchedulerOptions {
  registry: RegistryRepository;
  leases: LeaseManager;
  transport: JobTransport;
  logger: Logger;
  /** How often the scheduler looks for due work. */
  tickMs: number;
  /** Sync interval for sources without their own schedule. */
  defaultIntervalMs: number;
  /** Ttl of the scheduler's own lease. */
  leaseTtlMs: number;
  /** How often a synced mirror is re-verified. */
  verifyIntervalMs: number;
}

/** Only one process schedules at a time; the others stand by. */
export const SCHEDULER_LEASE_KEY = 'scheduler:replication';

export type SchedulerState = 'stopped' | 'standby' | 'active';

/**
 * Finds due work in the registry and nudges workers through the job
 * transport, under its own lease so that one scheduler is active however
 * many processes run. It enqueues no more than the transport has room for;
 * the transport serves hosts in turn.
 */
export class Scheduler {
  #state: SchedulerState = 'stopped';
  #lease: Lease | null = null;
  #stopHeartbeat: (() => void) | undefined;
  #timer: NodeJS.Timeout | undefined;
  #ticking: Promise<void> | undefined;

  constructor(private readonly options: SchedulerOptions) {}

  get state(): SchedulerState {
    return this.#state;
  }

  start(): void {
    if (this.#state !== 'stopped') return;
    this.#state = 'standby';
    this.#loop();
  }

  /** Runs one scheduling pass now (also used by tests and the "sync now" paths). */
  tick(): Promise<void> {
    this.#ticking ??= this.#tick().finally(() => (this.#ticking = undefined));
    return this.#ticking;
  }

  async stop(): Promise<void> {
    this.#state = 'stopped';
    if (this.#timer) clearTimeout(this.#timer);
    await this.#ticking;
    this.#stopHeartbeat?.();
    await this.#lease?.release().catch(() => undefined);
    this.#lease = null;
  }

  #loop(): void {
    if (this.#state === 'stopped') return;
    this.tick()
      .catch((error: unknown) => this.options.logger.error({ event: 'scheduler_error', err: String(error) }, 'scheduler pass failed'))
      .finally(() => {
        if (this.#state === 'stopped') return;
        this.#timer = setTimeout(() => this.#loop(), this.options.tickMs);
        this.#timer.unref();
      });
  }

  async #tick(): Promise<void> {
    if (this.#state === 'stopped' || !(await this.#holdLease())) return;
    const { registry, transport, defaultIntervalMs } = this.options;
    const { running, queued, capacity } = transport.load;
    const room = capacity * 2 - running - queued;
    if (room <= 0) return;
    const now = new Date();
    const due = await registry.due(now, { defaultIntervalMs, limit: room * 4 });
    let enqueued = 0;
    for (const source of due) {
      if (enqueued >= room) break;
      if (transport.has(source.id)) continue;
      const trigger = await this.#triggerFor(source, now);
      if (!trigger) continue;
      await transport.enqueue({ sourceId: source.id, trigger, host: urlHost(source.url) });
      enqueued++;
    }
    // Spare room goes to re-verification, which only reads local refs.
    if (enqueued >= room) return;
    const stale = await registry.dueForVerification(now, { intervalMs: this.options.verifyIntervalMs, limit: room - enqueued });
    for (const source of stale) {
      if (!transport.has(source.id)) await transport.enqueue({ sourceId: source.id, trigger: 'verify', host: urlHost(source.url) });
    }
  }

  /** Why a due row should run now, recording a request when the schedule (not a user) asks; null to leave it. */
  async #triggerFor(source: SourceWithRegistry, now: Date): Promise<SyncTrigger | null> {
    const { registry, leases } = this.options;
    const row = source.registry;
    switch (row.state) {
      case 'pending':
        return 'schedule';
      case 'failed':
        return 'retry';
      case 'started':
        // Left by a worker that died: recover it as soon as its lease is gone.
        if (await leases.inspect(syncLeaseKey(source.id))) return null;
        await registry.recoverStarted([source.id]);
        this.options.logger.warn({ event: 'recovered_started', source: source.name }, `recovered ${source.name} left started by a dead worker`);
        return 'retry';
      case 'synced': {
        if (source.cron) {
          const next = nextCronRun(source.cron, row.lastSyncedAt ?? new Date(0));
          if (!next || next > now) return null;
        }
        await registry.request(source.id, 'schedule', now);
        return 'schedule';
      }
      default:
        return null;
    }
  }

  async #holdLease(): Promise<boolean> {
    if (this.#lease && !this.#lease.signal.aborted) return true;
    this.#stopHeartbeat?.();
    const { leases, leaseTtlMs, logger } = this.options;
    this.#lease = await leases.tryAcquire(SCHEDULER_LEASE_KEY, { ttlMs: leaseTtlMs, owner: 'scheduler' });
    if (!this.#lease) {
      if (this.#state === 'active') logger.warn({ event: 'scheduler_standby' }, 'scheduler lease lost; standing by');
      this.#state = 'standby';
      return false;
    }
    this.#stopHeartbeat = startHeartbeat(this.#lease, Math.max(1, Math.floor(leaseTtlMs / 3)));
    this.#state = 'active';
    logger.info({ event: 'scheduler_active', fence: this.#lease.fence.toString() }, 'scheduler active');
    return true;
  }
}
