import type { JobHandler, JobTransport, SyncJob } from './transport.js';

/**
 * The embedded transport: a queue in this process with a fixed capacity,
 * served round-robin across upstream hosts so one busy host cannot starve
 * the others.
 */
export class InProcessTransport implements JobTransport {
  readonly #capacity: number;
  readonly #queues = new Map<string, SyncJob[]>();
  readonly #queued = new Set<number>();
  readonly #running = new Map<number, Promise<void>>();
  readonly #shutdown = new AbortController();
  #handler: JobHandler | undefined;
  #hosts: string[] = [];
  #next = 0;
  #stopped = false;

  constructor(options: { capacity: number; onError?: (error: unknown, job: SyncJob) => void }) {
    if (!Number.isInteger(options.capacity) || options.capacity < 1) {
      throw new RangeError(`capacity must be a positive integer, got ${options.capacity}`);
    }
    this.#capacity = options.capacity;
    this.#onError = options.onError ?? (() => {});
  }

  readonly #onError: (error: unknown, job: SyncJob) => void;

  get load() {
    return { running: this.#running.size, queued: this.#queued.size, capacity: this.#capacity };
  }

  has(sourceId: number): boolean {
    return this.#queued.has(sourceId) || this.#running.has(sourceId);
  }

  start(handler: JobHandler): void {
    this.#handler = handler;
    this.#pump();
  }

  async enqueue(job: SyncJob): Promise<void> {
    if (this.#stopped || this.#queued.has(job.sourceId)) return;
    this.#queued.add(job.sourceId);
    let queue = this.#queues.get(job.host);
    if (!queue) {
      queue = [];
      this.#queues.set(job.host, queue);
      this.#hosts.push(job.host);
    }
    queue.push(job);
    this.#pump();
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    this.#queues.clear();
    this.#queued.clear();
    this.#hosts = [];
    this.#shutdown.abort(new Error('forgesync is shutting down'));
    await Promise.allSettled(this.#running.values());
  }

  #pump(): void {
    while (this.#handler && !this.#stopped && this.#running.size < this.#capacity) {
      const job = this.#take();
      if (!job) return;
      this.#run(job);
    }
  }

  /** The next job whose source is not already running, taking hosts in turn. */
  #take(): SyncJob | undefined {
    for (let scanned = 0; scanned < this.#hosts.length; scanned++) {
      const host = this.#hosts[this.#next % this.#hosts.length]!;
      this.#next = (this.#next + 1) % Math.max(1, this.#hosts.length);
      const queue = this.#queues.get(host)!;
      const index = queue.findIndex((job) => !this.#running.has(job.sourceId));
      if (index === -1) continue;
      const [job] = queue.splice(index, 1);
      if (queue.length === 0) {
        this.#queues.delete(host);
        this.#hosts = this.#hosts.filter((name) => name !== host);
      }
      this.#queued.delete(job!.sourceId);
      return job;
    }
    return undefined;
  }

  #run(job: SyncJob): void {
    const running = (async () => {
      try {
        await this.#handler!(job, this.#shutdown.signal);
      } catch (error) {
        this.#onError(error, job);
      } finally {
        this.#running.delete(job.sourceId);
        this.#pump();
      }
    })();
    this.#running.set(job.sourceId, running);
  }
}
