import { Queue, Worker, type Job as BullJob, type JobsOptions } from 'bullmq';
import type { Redis } from 'ioredis';
import type { Logger } from '../../logging/logger.js';
import { allowListeners, LISTENERS_PER_TASK } from '../../util/abort-listeners.js';
import { InvalidJobError, JobBackendUnavailableError, JobTransportClosedError } from '../errors.js';
import type { JobTransportOptions } from '../open.js';
import type { Job, JobKind, JobLoad, JobPayload, JobTransport } from '../types.js';
import { validateJob, validateJobKind, validateKindName } from '../validate.js';
import { traceEnqueue, traceJobRun, type TraceCarrier } from '../../tracing/index.js';
import { within } from '../../util/within.js';
import { checkServer, connectCommandClient, endClient, parseJobsUrl, shut, workerClient, type JobsRedisTarget } from './connection.js';
import { Fairness } from './fairness.js';
import { ErrorLog } from './log.js';

export const DEFAULT_LOCK_MS = 15_000;
/** A job whose worker died is run again after each of up to this many stalls, then dropped (the app re-sends it). */
const MAX_STALLED_COUNT = 3;
/** How long close() waits for BullMQ to let go once the handlers have returned, before ending its connections. */
const CLOSE_GRACE_MS = 2000;
/** How long start() waits for the workers' connections. */
const START_TIMEOUT_MS = 5000;

/** What a BullMQ job carries (its bucket only decided its priority). */
interface JobData {
  key: string;
  payload?: JobPayload;
  /** The W3C trace context it was queued in (tracing on), continued by the worker's span. */
  trace?: TraceCarrier;
}

/** The jobs of one handled kind in this process. */
interface HandledKind {
  spec: JobKind;
  worker?: Worker<JobData>;
  client?: Redis;
  /** Handlers running now (load's `running`). */
  running: number;
  /** The last job started per key, so a key never runs twice here even if Redis lost track of it. */
  byKey: Map<string, Promise<void>>;
}

/**
 * Jobs on BullMQ: one queue per kind on a shared Redis, so any number of processes produce and
 * consume them; a sharded kind has one queue per storage shard (`<kind>@<shard>`), taken only
 * by the processes serving that shard. Coalescing is BullMQ's deduplication with keepLastIfActive, keyed by the job's
 * key: at most one job of a key waits and, while one runs, one follow-up is kept (the latest
 * nudge) and queued when it finishes, so no two jobs of a key run at once anywhere. Jobs are
 * nudges: removed when done or failed, never retried (the app's scheduler re-sends), and a job
 * whose worker died is moved back by another worker's stalled check within about two lock periods.
 * Fairness between buckets is by priority (see fairness.ts).
 */
class BullmqTransport implements JobTransport {
  readonly name = 'bullmq';
  /** Every process connected to the Redis queue serves it. */
  readonly shared = true;
  readonly #target: JobsRedisTarget;
  readonly #client: Redis;
  readonly #fairness: Fairness;
  readonly #logger: Logger;
  readonly #errors: ErrorLog;
  readonly #lockMs: number;
  readonly #shard: string | undefined;
  readonly #kinds = new Map<string, HandledKind>();
  readonly #queues = new Map<string, Queue<JobData>>();
  readonly #shutdown = new AbortController();
  #started = false;
  #closing: Promise<void> | undefined;

  /** Shared with the connections' retry strategies: set once close() begins. */
  readonly #closingFlag: { now: boolean };

  constructor(target: JobsRedisTarget, client: Redis, options: JobTransportOptions, lockMs: number, closingFlag: { now: boolean }) {
    this.#closingFlag = closingFlag;
    this.#target = target;
    this.#client = client;
    this.#logger = options.logger;
    this.#lockMs = lockMs;
    this.#shard = options.shard;
    this.#errors = new ErrorLog(options.logger);
    this.#fairness = new Fairness((kind) => this.#queue(kind), (err) => this.#errors.report('fairness', err));
    client.on('error', (err: unknown) => this.#errors.report('redis', err));
  }

  handle(kind: string, spec: JobKind): void {
    validateJobKind(kind, spec);
    if (this.#kinds.has(kind)) throw new InvalidJobError(`job kind "${kind}" already has a handler`);
    if (this.#closing) throw new JobTransportClosedError();
    const handled: HandledKind = { spec, running: 0, byKey: new Map() };
    this.#kinds.set(kind, handled);
    // Every running job of every kind listens on the one shutdown signal.
    allowListeners(this.#shutdown.signal, LISTENERS_PER_TASK * [...this.#kinds.values()].reduce((sum, other) => sum + other.spec.concurrency, 0));
    if (this.#started) void this.#startWorker(kind, handled).catch((err) => this.#errors.report(kind, err));
  }

  async start(): Promise<void> {
    if (this.#closing) throw new JobTransportClosedError();
    if (this.#started) return;
    this.#started = true;
    await Promise.all([...this.#kinds].map(([kind, handled]) => this.#startWorker(kind, handled)));
  }

  enqueue(job: Job): Promise<void> {
    try {
      validateJob(job);
      if (this.#closing) throw new JobTransportClosedError();
    } catch (error) {
      return Promise.reject(error);
    }
    const data: JobData = { key: job.key };
    if (job.payload !== undefined) data.payload = job.payload;
    const options: JobsOptions = {
      deduplication: { id: job.key, keepLastIfActive: true },
      removeOnComplete: true,
      removeOnFail: true,
      // attempts: the default 1, no retries.
    };
    // Buckets are served in turn by priority (fairness.ts). A job without one takes BullMQ's
    // plain wait list, which is served before every prioritized job: a kind either always gives
    // buckets or never does.
    const queueName = queueOf(job.kind, job.shard);
    if (job.fairness !== undefined) options.priority = this.#fairness.rank(queueName, job.key, job.fairness);
    return traceEnqueue({ kind: job.kind, key: job.key, transport: this.name, queue: queueName }, (trace) =>
      this.#queue(queueName)
        .add(job.kind, trace ? { ...data, trace } : data, options)
        .then(
          () => undefined,
          (err: unknown) => {
            throw this.#unavailable(`could not queue ${job.kind} job "${job.key}"`, err);
          },
        ),
    );
  }

  async load(kind: string, options: { shard?: string } = {}): Promise<JobLoad> {
    validateKindName(kind);
    const handled = this.#kinds.get(kind);
    if (options.shard !== undefined && handled?.spec.sharded) {
      const queue = this.#queue(queueOf(kind, options.shard));
      try {
        // Consumers are counted by their named connections (CLIENT LIST), as BullMQ's own tools do.
        const [counts, workers] = await Promise.all([queue.getJobCounts('active', 'wait', 'prioritized', 'delayed'), queue.getWorkersCount()]);
        return { running: counts.active ?? 0, queued: (counts.wait ?? 0) + (counts.prioritized ?? 0) + (counts.delayed ?? 0), capacity: workers * handled.spec.concurrency };
      } catch (err) {
        throw this.#unavailable(`could not count ${kind} jobs of shard ${options.shard}`, err);
      }
    }
    let queued: number;
    try {
      queued = await this.#queue(this.#servedQueue(kind, handled?.spec)).getJobCountByTypes('wait', 'prioritized', 'delayed');
    } catch (err) {
      throw this.#unavailable(`could not count ${kind} jobs`, err);
    }
    return { running: handled?.running ?? 0, queued, capacity: handled?.spec.concurrency ?? 0 };
  }

  close(): Promise<void> {
    this.#closing ??= this.#close();
    return this.#closing;
  }

  async #close(): Promise<void> {
    this.#closingFlag.now = true; // connections stop reconnecting
    this.#shutdown.abort(new JobTransportClosedError('forgesync is shutting down'));
    const handled = [...this.#kinds.values()];
    // Worker.close() stops fetching, waits for the running handlers, then closes its connections.
    const closing = Promise.allSettled(handled.map((h) => h.worker?.close().catch((err: unknown) => this.#errors.report('worker', err))));
    await Promise.allSettled(handled.flatMap((h) => [...h.byKey.values()]));
    // The handlers are done. With Redis down, BullMQ's wait for its blocking connection to end
    // never returns: ioredis' disconnect() leaves a client that was between reconnect attempts
    // "reconnecting" for good, without the 'end' BullMQ waits for. Such clients are driven to it.
    if ((await within(closing, CLOSE_GRACE_MS)) === 'late') {
      this.#logger.warn({ event: 'jobs_close_forced' }, 'BullMQ workers did not close in time (is Redis down?); ending their connections');
      for (const h of handled) {
        if (h.client) endClient(h.client);
        const blocking = await within(h.worker?.getBackend().blockingClient ?? Promise.resolve(undefined), 100);
        if (blocking && blocking !== 'late') endClient(blocking as unknown as Redis);
      }
      if ((await within(closing, CLOSE_GRACE_MS)) === 'late') {
        this.#logger.error({ event: 'jobs_close_abandoned' }, 'BullMQ workers still did not close; leaving them');
      }
    }
    this.#fairness.close();
    await Promise.allSettled([...this.#queues.values()].map((queue) => queue.close()));
    await Promise.allSettled([this.#client, ...handled.flatMap((h) => (h.client ? [h.client] : []))].map(shut));
  }

  /** The queue named `name` (see queueOf), created on first use (producing needs no handler here). */
  #queue(name: string): Queue<JobData> {
    let queue = this.#queues.get(name);
    if (!queue) {
      queue = new Queue<JobData>(name, { connection: this.#client, prefix: this.#target.prefix });
      queue.on('error', (err: unknown) => this.#errors.report(`queue ${name}`, err));
      this.#queues.set(name, queue);
    }
    return queue;
  }

  /** The queue this process's worker of `kind` takes jobs from: its shard's, for a sharded kind. */
  #servedQueue(kind: string, spec: JobKind | undefined): string {
    return queueOf(kind, spec?.sharded ? this.#shard : undefined);
  }

  async #startWorker(kind: string, handled: HandledKind): Promise<void> {
    handled.client = workerClient(this.#target, (err) => this.#errors.report(`worker ${kind}`, err), () => this.#closingFlag.now);
    const worker = new Worker<JobData>(this.#servedQueue(kind, handled.spec), (job: BullJob<JobData>) => this.#process(kind, handled, job), {
      connection: handled.client,
      prefix: this.#target.prefix,
      concurrency: handled.spec.concurrency,
      autorun: false,
      lockDuration: this.#lockMs,
      stalledInterval: this.#lockMs,
      maxStalledCount: MAX_STALLED_COUNT,
    });
    handled.worker = worker;
    // Failing to finish a job in Redis (its keys wiped under it, a lost lock) comes here.
    worker.on('error', (err: unknown) => this.#errors.report(`worker ${kind}`, err));
    void worker.run().catch((err: unknown) => this.#errors.report(`worker ${kind}`, err));
    let ready: unknown;
    try {
      ready = await within(worker.waitUntilReady(), START_TIMEOUT_MS);
    } catch (err) {
      ready = err;
    }
    // The worker keeps trying and runs jobs once Redis answers; close() stops it.
    if (ready !== undefined) {
      const cause = ready === 'late' ? new Error(`no answer within ${START_TIMEOUT_MS} ms`) : ready;
      throw this.#unavailable(`the ${kind} worker could not connect`, cause);
    }
  }

  async #process(kind: string, handled: HandledKind, bullJob: BullJob<JobData>): Promise<void> {
    const data = bullJob.data;
    if (typeof data?.key !== 'string') throw new InvalidJobError(`${kind} job ${bullJob.id} has no key; it was not queued by forgesync`);
    const job: Job = { kind, key: data.key };
    if (data.payload !== undefined) job.payload = data.payload;

    // BullMQ never hands out two jobs of a key at once while Redis keeps its keys; after a
    // wipe (or a lock lost to a stall) it may, and then the later one waits for the earlier here.
    const previous = handled.byKey.get(job.key);
    let done!: () => void;
    const mine = new Promise<void>((resolve) => (done = resolve));
    handled.byKey.set(job.key, mine);
    try {
      if (previous) {
        this.#logger.warn({ event: 'job_key_busy', kind, key: job.key }, `${kind} job "${job.key}" is still running here; the next one waits for it`);
        await previous;
      }
      // Fetched as the transport closed: dropped like the in-process transport's waiting jobs.
      if (this.#shutdown.signal.aborted) return;
      handled.running++;
      try {
        await traceJobRun({ kind, key: job.key, transport: this.name, queue: bullJob.queueName, messageId: bullJob.id }, data.trace, () => handled.spec.run(job, this.#shutdown.signal));
      } catch (error) {
        this.#logger.error({ event: 'job_error', kind, key: job.key, err: String(error) }, `${kind} job failed`);
        throw error; // fails this job only; the worker goes on
      } finally {
        handled.running--;
      }
    } finally {
      if (handled.byKey.get(job.key) === mine) handled.byKey.delete(job.key);
      done();
    }
  }

  #unavailable(what: string, cause: unknown): Error {
    if (cause instanceof JobBackendUnavailableError || cause instanceof JobTransportClosedError) return cause;
    if (this.#closing) return new JobTransportClosedError();
    return new JobBackendUnavailableError(`${what} on Redis at ${this.#target.shown}: ${(cause as Error)?.message ?? String(cause)}`, { cause });
  }
}

/** The queue of jobs of `kind`: `<kind>@<shard>` for a shard's jobs, `<kind>` for the others. */
function queueOf(kind: string, shard: string | undefined): string {
  return shard === undefined ? kind : `${kind}@${shard}`;
}

/**
 * Opens the BullMQ transport on `url` (`redis://[user:pass@]host:port[/db][?prefix=NAME]` or
 * `rediss://`). Rejects with JobBackendUnavailableError within about two seconds when Redis does
 * not answer, and when its maxmemory-policy is not noeviction.
 */
export async function openBullmqTransport(url: string, options: JobTransportOptions): Promise<JobTransport> {
  const target = parseJobsUrl(url);
  const lockMs = options.lockMs ?? DEFAULT_LOCK_MS;
  if (!Number.isInteger(lockMs) || lockMs < 100 || lockMs > 600_000) {
    throw new InvalidJobError(`lockMs must be an integer from 100 to 600000, got ${lockMs}`);
  }
  const closing = { now: false };
  const client = await connectCommandClient(target, () => closing.now);
  try {
    await checkServer(client, target.shown);
  } catch (err) {
    client.disconnect();
    throw err;
  }
  return new BullmqTransport(target, client, options, lockMs, closing);
}
