/** Why a sync was asked for; recorded on the attempt and in metrics. */
export type SyncTrigger = 'schedule' | 'manual' | 'webhook' | 'cli' | 'library' | 'retry' | 'verify';

/** A nudge to sync one source. It carries no state: the registry is the truth. */
export interface SyncJob {
  sourceId: number;
  trigger: SyncTrigger;
  /** Fairness bucket (the upstream host). */
  host: string;
}

export type JobHandler = (job: SyncJob, signal: AbortSignal) => Promise<void>;

/**
 * How a recorded request reaches a worker. Implementations: in-process now,
 * BullMQ on Redis later. A job may be lost or duplicated without harm,
 * because the worker re-reads the registry and the scheduler re-enqueues
 * whatever is still pending.
 */
export interface JobTransport {
  /** Begins delivering jobs to `handler`. */
  start(handler: JobHandler): void;
  /** Queues a nudge; a job for a source already queued is coalesced. */
  enqueue(job: SyncJob): Promise<void>;
  /** Jobs running plus jobs waiting. */
  readonly load: { running: number; queued: number; capacity: number };
  /** Whether a job for this source is queued or running here. */
  has(sourceId: number): boolean;
  /** Stops taking jobs, aborts running ones, and waits for them to finish. */
  stop(): Promise<void>;
}
