import type { Kysely } from 'kysely';
import { writeFenced } from '../leases/fenced.js';
import { skipMessage } from '../leases/errors.js';
import type { Lease } from '../leases/lease.js';
import type { LeaseManager } from '../leases/manager.js';
import type { Logger } from '../logging/logger.js';
import type { BackoffPolicy } from '../util/backoff.js';
import { backoffDelay } from '../util/backoff.js';
import { headSeq } from '../store/change-log.js';
import type { Schema } from '../store/types.js';
import { fullChunk } from './full-sync.js';
import type { FeedMetrics } from './metrics.js';
import { partialPass, type PassResult, type ReadAhead } from './partial-sync.js';
import { scopeMatcher } from './scope.js';
import type { FeedSink } from './sinks/types.js';
import type { FeedRecord, FeedRepository, FeedRun } from './store/feeds.js';
import { fullStartSteps, lastRunStep, runFailureStep, takeRequestsSteps } from './store/run-steps.js';
import { ATTR, withSpan } from '../tracing/index.js';

export type FeedOperation = 'partial sync' | 'full sync';

/** The lease every run of feed `name` holds. */
export const feedLeaseKey = (name: string) => `feed:${name}`;

export interface FeedRunnerOptions {
  db: Kysely<Schema>;
  repo: FeedRepository;
  leases: LeaseManager;
  logger: Logger;
  metrics: FeedMetrics;
  leaseTtlMs: number;
  instance: string;
  maxAttempts: number;
  backoff: BackoffPolicy;
  /** Events per full-sync chunk. */
  chunk: number;
  /** Changes per partial-sync pass. */
  window: number;
  /** The (cached) sink of a feed. */
  sinkFor(feed: FeedRecord): Promise<FeedSink>;
  readRefs(mirrorPath: string): Promise<Map<string, string>>;
}

/** What a run did; `ran: false` when the lease was taken (the run was skipped and its request kept). */
export type RunResult = { ran: false; holder: string | null } | { ran: true; outcome: string; delivered: number; more: boolean };

/** Passes one partial sync makes before it lets go of the lease (other feeds, a full sync's next chunk). */
const MAX_PASSES = 20;

/**
 * Runs a feed's operations, each under the feed's lease `feed:<name>`,
 * taken without waiting: a run that finds it taken logs the skip line
 * (naming the holder), counts the skip and leaves its request recorded, so
 * nothing is lost and the holder's release lets it run. Every write a run
 * makes is fenced by the lease, so a holder that lost it moves nothing.
 */
export class FeedRunner {
  constructor(private readonly options: FeedRunnerOptions) {}

  async run(name: string, operation: FeedOperation, shutdown?: AbortSignal): Promise<RunResult> {
    const { leases, logger, repo, leaseTtlMs } = this.options;
    const feed = await repo.find(name);
    if (!feed) return { ran: true, outcome: 'gone', delivered: 0, more: false };
    const key = feedLeaseKey(name);
    const startedAt = new Date();
    const attempt = await leases.tryWithLease(key, { ttlMs: leaseTtlMs, owner: operation, ...(shutdown ? { signal: shutdown } : {}) }, async (lease, signal) => {
      const result = await withSpan(`feed ${operation}`, { [ATTR.feed]: name }, () => (operation === 'full sync' ? this.#fullChunk(feed, lease, signal) : this.#partial(feed, lease, signal)));
      const run: FeedRun = { operation, startedAt: startedAt.toISOString(), finishedAt: new Date().toISOString(), outcome: result.outcome, delivered: result.delivered };
      if (result.outcome !== 'idle') await this.#write(feed.id, lease, [lastRunStep(repo.db, feed.id, run)]);
      return result;
    });
    if (attempt.ran) return { ran: true, ...attempt.value };
    const holder = attempt.holder ? `${attempt.holder.owner.name}(${attempt.holder.owner.pid})` : null;
    // The seed's line, word for word: feed, operation, status.
    const status = skipMessage(attempt.holder);
    logger.info({ feed: name, operation, status, event: 'feed_skip', lease_key: key }, status);
    this.options.metrics.skips.inc({ feed: name, operation });
    await repo.recordSkip(feed.id, operation, new Date());
    return { ran: false, holder };
  }

  /** A fenced write of `steps` (see writeFenced); false when the lease was lost. */
  async #write(feedId: number, lease: Lease, steps: Parameters<FeedRepository['fenced']>[2]): Promise<boolean> {
    const { repo } = this.options;
    return (await writeFenced(lease, async (fence) => ((await repo.fenced(feedId, fence, steps)) ? true : null), () => repo.storedFence(feedId))) === true;
  }

  async #partial(feed: FeedRecord, lease: Lease, signal: AbortSignal): Promise<{ outcome: string; delivered: number; more: boolean }> {
    const { repo, db } = this.options;
    const feedId = feed.id;
    // The requests this run serves are taken first (read again now that the lease is held):
    // one made from now on gets a run of its own.
    const requested = await repo.find(feed.name);
    if (!requested) return { outcome: 'gone', delivered: 0, more: false };
    const taken = await this.#write(feedId, lease, takeRequestsSteps(db, requested));
    if (!taken) return { outcome: 'lost', delivered: 0, more: false };
    let readAhead: ReadAhead | undefined;
    let delivered = 0;
    let outcome = 'idle';
    // A clean pass's write (everything acknowledged, nothing held back) is made while the next
    // pass's events are out: the sink is never idle for the bookkeeping. Its cursor is known.
    let deferred: { write: () => Promise<boolean>; cursor: number } | undefined;
    const flush = async (): Promise<boolean> => {
      const pending = deferred;
      deferred = undefined;
      return pending ? pending.write() : true;
    };
    const stop = async (value: string) => ({ outcome: (await flush()) ? value : 'lost', delivered, more: false });
    let last: PassResult | undefined;
    for (let pass = 0; pass < MAX_PASSES; pass++) {
      const record = await repo.find(feed.name);
      if (!record) return { outcome: 'gone', delivered, more: false };
      if (record.paused) return stop('paused');
      if (record.disabled) return stop('disabled');
      if (signal.aborted) return stop('lost');
      let previousWritten = true;
      const result = await partialPass({
        db,
        feed: deferred ? { ...record, cursor: deferred.cursor } : record,
        sink: await this.options.sinkFor(record),
        instance: this.options.instance,
        matches: scopeMatcher(record),
        window: this.options.window,
        maxAttempts: this.options.maxAttempts,
        backoff: this.options.backoff,
        signal,
        ...(readAhead ? { readAhead } : {}),
        ...(deferred ? { whileDelivering: async () => void (previousWritten = await flush()) } : {}),
      });
      if (!previousWritten) return { outcome: 'lost', delivered, more: false };
      last = result;
      readAhead = result.readAhead;
      delivered += result.delivered;
      if (result.delivered > 0) this.options.metrics.delivered.inc({ feed: record.name, operation: 'partial sync' }, result.delivered);
      outcome = result.failed > 0 ? (result.delivered > 0 ? 'retrying' : 'failed') : delivered > 0 || outcome !== 'idle' ? 'delivered' : 'idle';
      if (result.clean && result.more && readAhead && pass + 1 < MAX_PASSES) {
        deferred = { write: () => this.#write(feedId, lease, result.steps), cursor: result.cursor };
        continue;
      }
      if (!(await this.#write(feedId, lease, result.steps))) return { outcome: 'lost', delivered, more: false };
      if (result.gone) return { outcome: 'disabled', delivered, more: false };
      if (!result.more) return { outcome, delivered, more: false };
    }
    // Out of passes: another run is due, unless the window read ahead shows that nothing is left.
    const nextWindow = last?.clean && readAhead?.after === last.cursor ? await readAhead.changes.catch(() => undefined) : undefined;
    const drained = nextWindow?.length === 0;
    return { ...(await stop(outcome)), more: !drained };
  }

  async #fullChunk(known: FeedRecord, lease: Lease, signal: AbortSignal): Promise<{ outcome: string; delivered: number; more: boolean }> {
    const { repo, db } = this.options;
    const feedId = known.id;
    // Read again now that the lease is held: the chunk cursor is the last holder's.
    let feed = await repo.find(known.name);
    if (!feed) return { outcome: 'gone', delivered: 0, more: false };
    if (feed.fullRequestedAt === null && feed.fullStartedAt === null) return { outcome: 'idle', delivered: 0, more: false };
    if (feed.paused) return { outcome: 'paused', delivered: 0, more: false };
    if (feed.disabled) return { outcome: 'disabled', delivered: 0, more: false };
    if (feed.fullStartedAt === null) {
      if (!(await this.#write(feedId, lease, fullStartSteps(db, feed, await headSeq(db), new Date())))) return { outcome: 'lost', delivered: 0, more: false };
      feed = await repo.get(feed.name);
    }
    const result = await fullChunk({
      db,
      feed,
      sink: await this.options.sinkFor(feed),
      instance: this.options.instance,
      matches: scopeMatcher(feed),
      chunk: this.options.chunk,
      readRefs: this.options.readRefs,
      signal,
    });
    if (result.steps === null) {
      const failures = feed.failures + 1;
      const written = await this.#write(feedId, lease, [
        runFailureStep(db, feedId, {
          failures,
          retryAt: Date.now() + backoffDelay(failures, this.options.backoff),
          lastError: result.error?.slice(0, 2000) ?? null,
          ...(result.gone ? { disabled: `the sink answered 410 Gone (${result.gone}); \`forgesync feed resume ${feed.name}\` enables it again` } : {}),
        }),
      ]);
      return { outcome: written ? (result.gone ? 'disabled' : 'failed') : 'lost', delivered: 0, more: false };
    }
    if (!(await this.#write(feedId, lease, result.steps))) return { outcome: 'lost', delivered: 0, more: false };
    if (result.exported > 0) this.options.metrics.delivered.inc({ feed: feed.name, operation: 'full sync' }, result.exported);
    // The last chunk's run reports the whole full sync.
    return { outcome: result.done ? 'delivered' : 'running', delivered: result.done ? feed.fullDone + result.exported : result.exported, more: !result.done };
  }
}
