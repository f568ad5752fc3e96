import { setTimeout as sleep } from 'node:timers/promises';
import type { LeaseManager } from '../leases/manager.js';
import type { Logger } from '../logging/logger.js';
import type { RegistryRepository } from './store/registry.js';
import type { SourceWithRegistry, SyncTrigger } from '../store/types.js';
import { nextCronRun } from './schedule.js';
import { syncLeaseKey } from './sync.js';

export interface SchedulerOptions {
  registry: RegistryRepository;
  leases: LeaseManager;
  /** How many more sync jobs the workers have room for now. */
  syncRoom: () => Promise<number>;
  /** Nudges a worker to sync a source. */
  nudge: (source: SourceWithRegistry, trigger: SyncTrigger) => Promise<void>;
  /** Nudges a worker to re-verify a synced mirror. */
  nudgeVerify: (source: SourceWithRegistry) => Promise<void>;
  logger: Logger;
  /** How often the scheduler looks for due work. */
  tickMs: number;
  /**
   * How long a claimed row waits before it is due again if its job never
   * ran (a job lost with a worker or a wiped queue): the sweep.
   */
  claimMs: number;
  /** Ttl of the scheduler's own lease. */
  leaseTtlMs: number;
  /** How often a synced mirror is re-verified. */
  verifyIntervalMs: number;
}

/** Claims per pass at most: rows that need nothing now do not stall the pass. */
const CLAIM_BATCHES = 4;

/**
 * The pause after a pass that used all the workers' room (more is probably
 * due): passes a full tick apart would cap scheduled syncs at room/tick
 * (~4/s a worker process at the defaults), however fast syncs are, where
 * 100,000 sources on a 1 h interval need ~28/s.
 */
const FAST_PASS_MS = 100;

/**
 * What a pass found: `limited` when it stopped because the room (or its claim
 * batches) ran out, so more is probably due; `caught-up` when it found less
 * due than the room; `no-room` when the workers had none.
 */
type PassOutcome = 'limited' | 'caught-up' | 'no-room';

/** Only one process schedules at a time; the others stand by. */
export const SCHEDULER_LEASE_KEY = 'scheduler:replication';

export type SchedulerState = 'stopped' | 'standby' | 'active';

/**
 * Finds due work in the registry and nudges workers, under its own lease so
 * that one scheduler is active however many processes run; the others stand
 * by and take over within a lease ttl. It nudges no more than the workers
 * have room for. Jobs are only nudges: whatever a lost job stood for is
 * still pending in the registry, and the next pass nudges it again.
 */
export class Scheduler {
  #state: SchedulerState = 'stopped';
  #stop = new AbortController();
  #loop: Promise<void> | undefined;
  #pass: Promise<PassOutcome | undefined> | undefined;

  constructor(private readonly options: SchedulerOptions) {}

  get state(): SchedulerState {
    return this.#state;
  }

  start(): void {
    if (this.#loop) return;
    this.#state = 'standby';
    this.#stop = new AbortController();
    this.#loop = this.#run();
  }

  /** Runs a scheduling pass now if this scheduler is the active one (sharing a pass in flight); resolves after it. */
  async tick(): Promise<void> {
    if (this.#state === 'active') await this.#onePass();
  }

  /** Stops scheduling, waits for a pass in flight, and lets go of the lease. */
  async stop(): Promise<void> {
    this.#stop.abort(new Error('the scheduler is stopping'));
    await this.#loop;
    this.#loop = undefined;
    this.#state = 'stopped';
  }

  async #run(): Promise<void> {
    const { leases, leaseTtlMs, logger, tickMs } = this.options;
    const stopping = this.#stop.signal;
    while (!stopping.aborted) {
      await leases
        .tryWithLease(SCHEDULER_LEASE_KEY, { ttlMs: leaseTtlMs, owner: 'scheduler', signal: stopping }, async (lease, signal) => {
          this.#state = 'active';
          logger.info({ event: 'scheduler_active', fence: lease.fence.toString() }, 'scheduler active');
          let wait = tickMs;
          while (!signal.aborted) {
            wait = this.#nextWait(await this.#onePass(), wait);
            await this.#pause(wait, signal);
          }
        })
        .catch((error: unknown) => {
          logger.warn({ event: 'scheduler_lease_error', err: String(error) }, 'scheduler lease failed; standing by');
          return null;
        });
      if (stopping.aborted) break;
      if (this.#state === 'active') logger.warn({ event: 'scheduler_standby' }, 'scheduler lease lost; standing by');
      this.#state = 'standby';
      await this.#pause(tickMs, stopping);
    }
  }

  /** Waits `ms`, or less when `signal` aborts. */
  async #pause(ms: number, signal: AbortSignal): Promise<void> {
    await sleep(ms, undefined, { signal }).catch(() => undefined);
  }

  /**
   * How long to wait after a pass that ended as `outcome`, the last wait being `last`.
   * A limited pass is followed soon (the backlog drains as fast as the workers take
   * it); one that caught up, or failed (undefined: no hammering a store that is
   * down), waits the full tick. No room waits twice as long as the last time, up to
   * the tick: in a backlog the workers free room within a sync or two, and a full
   * tick's wait would leave them idle for most of it; when they stay busy the
   * passes slow down to one a tick after a few doublings, so this never spins.
   */
  #nextWait(outcome: PassOutcome | undefined, last: number): number {
    const { tickMs } = this.options;
    if (outcome === 'limited') return Math.min(tickMs, FAST_PASS_MS);
    if (outcome === 'no-room') return Math.min(tickMs, 2 * last);
    return tickMs;
  }

  #onePass(): Promise<PassOutcome | undefined> {
    this.#pass ??= this.#schedule()
      .catch((error: unknown) => {
        this.options.logger.error({ event: 'scheduler_error', err: String(error) }, 'scheduler pass failed');
        return undefined;
      })
      .finally(() => (this.#pass = undefined));
    return this.#pass;
  }

  async #schedule(): Promise<PassOutcome> {
    const { registry, claimMs } = this.options;
    const room = await this.options.syncRoom();
    if (room <= 0) return 'no-room';
    const now = new Date();
    // Claimed rows that need nothing now (a live worker's, a cron not due) leave room for more.
    let nudged = 0;
    // Whether a claim came back short: then nothing more is due now.
    let drained = false;
    for (let batch = 0; batch < CLAIM_BATCHES && nudged < room; batch++) {
      const limit = room - nudged;
      const due = await registry.claimDue(now, { limit, claimMs });
      for (const source of due) {
        const trigger = await this.#triggerFor(source, now);
        if (!trigger) continue;
        await this.options.nudge(source, trigger);
        nudged++;
      }
      if (due.length < limit) {
        drained = true;
        break;
      }
    }
    // Spare room goes to re-verification, which only reads local refs.
    if (nudged >= room) return 'limited';
    const stale = await registry.dueForVerification(now, { intervalMs: this.options.verifyIntervalMs, limit: room - nudged });
    for (const source of stale) await this.options.nudgeVerify(source);
    // Out of claim batches with rows still coming (claimed rows stay claimed: the next pass
    // gets new ones): more is due. Verifications do not count: they are not claimed, so a
    // pass soon after would only find the same rows, whose jobs have not run yet.
    return drained ? 'caught-up' : 'limited';
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
}
