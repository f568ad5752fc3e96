import type { Logger } from '../logging/logger.js';
import { allowListeners, LISTENERS_PER_TASK } from '../util/abort-listeners.js';
import { traceEnqueue, traceJobRun, type TraceCarrier } from '../tracing/index.js';
import { InvalidJobError, JobTransportClosedError } from './errors.js';
import type { Job, JobKind, JobLoad, JobTransport } from './types.js';
import { validateJob, validateJobKind } from './validate.js';

/** The jobs of one kind: waiting per fairness bucket, and running, by key. */
class KindQueue {
  /** Waiting jobs per bucket; the bucket served last moves to the back (round-robin). */
  readonly buckets = new Map<string, Job[]>();
  readonly waiting = new Set<string>();
  readonly running = new Map<string, Promise<void>>();

  constructor(readonly spec: JobKind) {}

  add(job: Job): boolean {
    if (this.waiting.has(job.key)) return false;
    this.waiting.add(job.key);
    const bucket = job.fairness ?? '';
    const queue = this.buckets.get(bucket);
    if (queue) queue.push(job);
    else this.buckets.set(bucket, [job]);
    return true;
  }

  /** The next job whose key is not running, from the first bucket that has one. */
  take(): Job | undefined {
    for (const [bucket, queue] of this.buckets) {
      const index = queue.findIndex((job) => !this.running.has(job.key));
      if (index === -1) continue;
      const [job] = queue.splice(index, 1) as [Job];
      this.buckets.delete(bucket);
      if (queue.length > 0) this.buckets.set(bucket, queue);
      this.waiting.delete(job.key);
      return job;
    }
    return undefined;
  }
}

/**
 * The embedded transport: queues in this process, one per kind, each with
 * its own concurrency, serving fairness buckets round-robin. A job of a key
 * that is running waits until that one is done (the follow-up); a job of a
 * key already waiting is dropped (coalesced). Jobs live only in memory: the
 * registry holds what they stand for.
 */
export class InProcessTransport implements JobTransport {
  readonly name = 'in-process';
  /** Only this process serves its queues. */
  readonly shared = false;
  readonly #kinds = new Map<string, KindQueue>();
  readonly #shutdown = new AbortController();
  readonly #logger: Logger | undefined;
  /** The trace context each waiting job was queued in (tracing on only). */
  readonly #traces = new WeakMap<Job, TraceCarrier>();
  #started = false;
  #closed = false;

  constructor(options: { logger?: Logger } = {}) {
    this.#logger = options.logger;
  }

  handle(kind: string, spec: JobKind): void {
    validateJobKind(kind, spec);
    if (this.#kinds.has(kind)) throw new InvalidJobError(`job kind "${kind}" already has a handler`);
    this.#kinds.set(kind, new KindQueue(spec));
    // Every running job of every kind listens on the one shutdown signal.
    allowListeners(this.#shutdown.signal, LISTENERS_PER_TASK * [...this.#kinds.values()].reduce((sum, queue) => sum + queue.spec.concurrency, 0));
  }

  async start(): Promise<void> {
    if (this.#closed) throw new JobTransportClosedError();
    this.#started = true;
    for (const queue of this.#kinds.values()) this.#pump(queue);
  }

  async enqueue(job: Job): Promise<void> {
    validateJob(job);
    if (this.#closed) return;
    const queue = this.#kinds.get(job.kind);
    // A kind nobody handles here has nowhere to go; the registry still holds the request.
    if (!queue) return;
    await traceEnqueue({ kind: job.kind, key: job.key, transport: this.name, queue: job.kind }, async (trace) => {
      if (trace) this.#traces.set(job, trace);
      if (queue.add(job)) this.#pump(queue);
    });
  }

  async load(kind: string, _options?: { shard?: string }): Promise<JobLoad> {
    const queue = this.#kinds.get(kind);
    return { running: queue?.running.size ?? 0, queued: queue?.waiting.size ?? 0, capacity: queue?.spec.concurrency ?? 0 };
  }

  async close(): Promise<void> {
    this.#closed = true;
    this.#shutdown.abort(new JobTransportClosedError('forgesync is shutting down'));
    const running = [...this.#kinds.values()].flatMap((queue) => [...queue.running.values()]);
    for (const queue of this.#kinds.values()) {
      queue.buckets.clear();
      queue.waiting.clear();
    }
    await Promise.allSettled(running);
  }

  #pump(queue: KindQueue): void {
    while (this.#started && !this.#closed && queue.running.size < queue.spec.concurrency) {
      const job = queue.take();
      if (!job) return;
      this.#run(queue, job);
    }
  }

  #run(queue: KindQueue, job: Job): void {
    const running = (async () => {
      try {
        await traceJobRun({ kind: job.kind, key: job.key, transport: this.name, queue: job.kind }, this.#traces.get(job), () => queue.spec.run(job, this.#shutdown.signal));
      } catch (error) {
        this.#logger?.error({ event: 'job_error', kind: job.kind, key: job.key, err: String(error) }, `${job.kind} job failed`);
      } finally {
        queue.running.delete(job.key);
        this.#pump(queue);
      }
    })();
    queue.running.set(job.key, running);
  }
}
