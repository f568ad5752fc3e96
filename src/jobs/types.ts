/**
 * Jobs are nudges. A module records what is wanted in its registry first and
 * then enqueues a job that says "look at this key"; the handler reads the
 * registry and does whatever is due. So a lost job loses nothing (a
 * scheduler finds the pending row again) and a duplicated one costs a look.
 */

/** Small values a handler may use as hints (never state of record). */
export type JobPayload = Record<string, string | number | boolean | null>;

export interface Job {
  /** Which handler runs it, e.g. `sync`. */
  kind: string;
  /**
   * What it is about, e.g. a source id. Jobs of one (kind, key) never run at
   * once, and coalesce: at most one waits, plus one follow-up while one runs.
   */
  key: string;
  /** Hints for the handler; when jobs coalesce, one of their payloads is kept. */
  payload?: JobPayload;
  /**
   * Fairness bucket, e.g. the upstream host: buckets are served in turn so one
   * cannot starve the others. Jobs of a kind should either all carry one or
   * none: a shared queue serves jobs without a bucket first.
   */
  fairness?: string;
  /**
   * The storage shard whose workers run it, for a kind declared `sharded`
   * (a source's jobs go to the shard holding its mirror). On a shared
   * transport only the processes serving that shard take it; the
   * in-process transport serves every shard.
   */
  shard?: string;
}

/**
 * Runs one job. `signal` aborts when the transport shuts down; a handler
 * that throws is logged and the transport goes on with the next job.
 */
export type JobHandler = (job: Job, signal: AbortSignal) => Promise<void>;

/** How jobs of one kind are run in this process. */
export interface JobKind {
  /** Jobs of this kind running at once in this process. */
  concurrency: number;
  run: JobHandler;
  /** Its jobs carry a shard and run only where that shard is served (see Job.shard). */
  sharded?: boolean;
}

/** Jobs of one kind: running in this process, waiting (queue-wide on a shared queue), and this process's capacity. */
export interface JobLoad {
  running: number;
  queued: number;
  capacity: number;
}

/**
 * How a job reaches a worker: in this process (the default), or through a
 * queue several processes share (BullMQ on Redis). See jobs/open.ts.
 */
export interface JobTransport {
  /** `in-process` or `bullmq`, for logs and the overview. */
  readonly name: string;
  /**
   * Whether other processes serve this transport's queue (a shared queue such as BullMQ's):
   * a job enqueued here may run elsewhere. False for the in-process transport, whose queue
   * only this process serves: a process that runs no jobs should not enqueue on it.
   */
  readonly shared: boolean;
  /** Declares how jobs of `kind` run here; call before start(). A process that never starts only produces jobs. */
  handle(kind: string, spec: JobKind): void;
  /** Begins running queued and future jobs of the declared kinds. */
  start(): Promise<void>;
  /** Queues a job, coalesced per (kind, key); resolves once it is queued (durably, on a shared queue). */
  enqueue(job: Job): Promise<void>;
  /**
   * Jobs of `kind` running here and waiting, and this process's capacity.
   * With `shard` (a sharded kind on a shared queue): that shard's whole
   * queue, every process consuming it: jobs running anywhere, and the
   * capacity of its consumers (each counted at this process's concurrency).
   * The in-process transport serves every shard itself and ignores it.
   */
  load(kind: string, options?: { shard?: string }): Promise<JobLoad>;
  /** Stops taking jobs, aborts running handlers through their signal, waits for them, and disconnects. */
  close(): Promise<void>;
}
