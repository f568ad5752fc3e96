import { createHash } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Registry } from 'prom-client';
import type { SettingValues } from '../config/setting.js';
import type { CredentialStore } from '../credentials/store.js';
import type { EgressPolicy } from '../egress/policy.js';
import type { JobTransport } from '../jobs/types.js';
import type { RouteContext } from '../server/module-routes.js';
import type { LeaseManager } from '../leases/manager.js';
import type { Logger } from '../logging/logger.js';
import type { ForgesyncServer } from '../server/app.js';
import type { Database } from '../store/database.js';
import { headSeq } from '../store/change-log.js';
import { changesNumbered, warmChangeReads } from './store/changes.js';
import { InvalidFeedInputError, SecretEnvReplacedError } from './errors.js';
import { feedMetrics, type FeedMetrics } from './metrics.js';
import { FeedRunner, feedLeaseKey, type FeedOperation, type RunResult } from './runner.js';
import { parseSourcesGlob, parseTypes } from './scope.js';
import type { feedSettings } from './settings.js';
import { checkDirectoryInRoot, fileSinkDirectory } from './sinks/file-root.js';
import { openSink, redactSinkUrl, validateSinkUrl } from './sinks/open.js';
import { secretTargetOf } from './sinks/url.js';
import type { FeedSink } from './sinks/types.js';
import { feedStatus, type FeedStatus } from './status.js';
import { FeedRepository, type FeedRecord } from './store/feeds.js';
import { pruneChangeLog } from './prune.js';

/** The job kind of the feeds: "look at feed <key>", run whatever is due (a full sync's next chunk, a partial sync). */
export const FEED_JOB = 'feed';

const NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$/;
/** How often the change log is pruned by a serving process. */
const PRUNE_MS = 60_000;

export interface FeedsOptions {
  database: Pick<Database, 'db'>;
  leases: LeaseManager;
  jobs: Pick<JobTransport, 'enqueue' | 'shared'>;
  logger: Logger;
  metrics: Registry;
  /** Every sink's connections are checked against it. */
  policy: EgressPolicy;
  leaseTtlMs: number;
  settings: SettingValues<typeof feedSettings>;
  /** Whether this process runs jobs (a CLI process only records requests). */
  runsJobs: () => boolean;
  /** The refs of a mirror (a full sync exports them). */
  readRefs(mirrorPath: string): Promise<Map<string, string>>;
  /** The feed secrets the operator defined (sinks' signing secrets and tokens), each bound to sink hosts. */
  secrets: Pick<CredentialStore, 'feedSecretFor'>;
}

export interface AddFeedInput {
  name: string;
  sink: string;
  types?: string | readonly string[] | null;
  sources?: string | null;
  /** The name of a feed secret the operator defined, bound to the sink's host: the webhook signing secret or the NATS token. */
  secret?: string | null;
  /** Replaced by `secret`: refused (it named any environment variable). */
  secretEnv?: unknown;
  batch?: number;
}

/** A dead letter as listed. */
export interface DeadLetter {
  seq: number;
  key: string;
  type: string | null;
  subject: string | null;
  attempts: number;
  lastError: string | null;
}

/**
 * The change feeds: export what the other modules record in the change log
 * to HTTP endpoints, NATS JetStream and files, each feed under its own lease.
 */
export class Feeds {
  readonly jobs;
  readonly repo: FeedRepository;
  readonly #runner: FeedRunner;
  readonly #metrics: FeedMetrics;
  readonly #sinks = new Map<string, { signature: string; sink: Promise<FeedSink> }>();
  #timer: NodeJS.Timeout | undefined;
  #polling: Promise<void> | undefined;
  #prunedAt = 0;
  #nudging: Promise<void> | undefined;
  #nudgeAgain = false;

  constructor(private readonly options: FeedsOptions) {
    const { settings } = options;
    this.repo = new FeedRepository(options.database.db);
    this.#metrics = feedMetrics(options.metrics, { lag: () => this.#lag() });
    this.#runner = new FeedRunner({
      db: options.database.db,
      repo: this.repo,
      leases: options.leases,
      logger: options.logger,
      metrics: this.#metrics,
      leaseTtlMs: options.leaseTtlMs,
      instance: settings.instanceName,
      maxAttempts: settings.feedMaxAttempts,
      backoff: { baseMs: settings.feedRetryBaseMs, maxMs: settings.feedRetryMaxMs },
      chunk: settings.feedChunk,
      window: 500,
      sinkFor: (feed) => this.#sinkFor(feed),
      readRefs: options.readRefs,
    });
    this.jobs = { [FEED_JOB]: { concurrency: 4, run: (job: { key: string }, signal: AbortSignal) => this.#runDue(job.key, signal) } };
  }

  /** Adds a feed; its first run is a full sync of everything in scope, then the changes from now on. */
  async add(input: AddFeedInput): Promise<FeedStatus> {
    const name = typeof input.name === 'string' ? input.name.trim() : '';
    if (!NAME.test(name)) throw new InvalidFeedInputError('a feed name is 1 to 100 letters, digits, dots, dashes or underscores, starting with a letter or digit');
    if (input.secretEnv !== undefined) throw new SecretEnvReplacedError();
    const url = validateSinkUrl(input.sink);
    const secret = input.secret ?? null;
    if (url.protocol === 'file:') {
      if (secret !== null) throw new InvalidFeedInputError('a file sink takes no secret (--secret): it signs nothing and sends nothing');
      const root = this.options.settings.feedFileRoot;
      await checkDirectoryInRoot(fileSinkDirectory(url, root), root, redactSinkUrl(url.href).slice(0, 200));
    }
    // The one message for every reason it cannot be used, so that nothing is learnt about the environment.
    if (secret !== null) await this.options.secrets.feedSecretFor(secret, secretTargetOf(url));
    const batch = input.batch ?? (url.protocol === 'http:' || url.protocol === 'https:' ? 1 : 100);
    if (!Number.isInteger(batch) || batch < 1 || batch > 1000) throw new InvalidFeedInputError(`--batch must be a whole number from 1 to 1000, not ${String(input.batch)}`);
    const record = await this.repo.create(
      { name, sink: url.href, types: parseTypes(input.types ?? null), sources: parseSourcesGlob(input.sources ?? null), secret, batch },
      await headSeq(this.options.database.db),
      new Date(),
    );
    await this.#enqueue(record.name);
    return this.status(record);
  }

  async list(): Promise<FeedStatus[]> {
    const [feeds, head] = await Promise.all([this.repo.list(), headSeq(this.options.database.db)]);
    return Promise.all(feeds.map((feed) => this.#status(feed, head)));
  }

  /** @throws FeedNotFoundError */
  async status(feed: string | FeedRecord): Promise<FeedStatus> {
    const record = typeof feed === 'string' ? await this.repo.get(feed) : feed;
    return this.#status(record, await headSeq(this.options.database.db));
  }

  async #status(feed: FeedRecord, head: number): Promise<FeedStatus> {
    const holder = await this.options.leases.inspect(feedLeaseKey(feed.name));
    return feedStatus(this.options.database.db, this.repo, { feed, holder: holder ? `${holder.owner.name}(${holder.owner.pid})` : null, head });
  }

  /** Requests a partial sync (the changes since the cursor); with `wait`, runs it here (or waits for the holder) and returns the status after it. */
  async sync(name: string, options: { wait?: boolean; timeoutMs?: number } = {}): Promise<FeedStatus> {
    await this.repo.request(name, { partial: true }, new Date());
    if (!options.wait) {
      await this.#enqueue(name);
      return this.status(name);
    }
    await this.#runHere(name, 'partial sync', options.timeoutMs ?? 5 * 60_000);
    return this.status(name);
  }

  /** Requests a full sync (the current state of everything in scope); with `wait`, runs it here chunk by chunk. */
  async resync(name: string, options: { wait?: boolean; timeoutMs?: number } = {}): Promise<FeedStatus> {
    await this.repo.request(name, { full: true }, new Date());
    if (!options.wait) {
      await this.#enqueue(name);
      return this.status(name);
    }
    await this.#runHere(name, 'full sync', options.timeoutMs ?? 30 * 60_000);
    return this.status(name);
  }

  async pause(name: string): Promise<FeedStatus> {
    return this.status(await this.repo.request(name, { paused: true }, new Date()));
  }

  async resume(name: string): Promise<FeedStatus> {
    const record = await this.repo.request(name, { paused: false, partial: true }, new Date());
    await this.#enqueue(name);
    return this.status(record);
  }

  /** Delivers again every change in scope from `fromSeq` on (the next partial sync moves the cursor back). */
  async replay(name: string, fromSeq: number): Promise<FeedStatus> {
    if (!Number.isSafeInteger(fromSeq) || fromSeq < 1) throw new InvalidFeedInputError(`--from-seq must be a change number of at least 1, not ${String(fromSeq)}`);
    const head = await headSeq(this.options.database.db);
    if (fromSeq > head + 1) throw new InvalidFeedInputError(`--from-seq ${fromSeq} is beyond the last change (${head})`);
    const record = await this.repo.request(name, { replayFrom: fromSeq, partial: true }, new Date());
    await this.#enqueue(name);
    return this.status(record);
  }

  /** The feed's dead letters, in order, with the type and subject of each change. */
  async deadLetters(name: string): Promise<DeadLetter[]> {
    const letters = await this.repo.deadLetters((await this.repo.get(name)).id);
    const changes = new Map((await changesNumbered(this.repo.db, letters.map((letter) => letter.seq))).map((change) => [change.seq, change]));
    return letters.map((letter) => ({ ...letter, type: changes.get(letter.seq)?.type ?? null, subject: changes.get(letter.seq)?.subject ?? null }));
  }

  /** Sends the dead letters again (in order, first try at once); returns how many. */
  async retryDeadLetters(name: string): Promise<number> {
    const feed = await this.repo.get(name);
    const moved = await this.repo.retryDeadLetters(feed.id, new Date());
    await this.#enqueue(name);
    return moved;
  }

  async remove(name: string): Promise<void> {
    await this.repo.remove(name);
    await this.#closeSink(name);
  }

  /**
   * Told by a writer that changes were recorded: every active feed looks at
   * once. Nudges that arrive while one reads the feeds share the next read.
   */
  nudge(): void {
    if (!this.#enqueues()) return;
    if (this.#nudging) {
      this.#nudgeAgain = true;
      return;
    }
    this.#nudging = (async () => {
      do {
        this.#nudgeAgain = false;
        for (const name of await this.repo.activeFeedNames()) await this.#enqueue(name);
      } while (this.#nudgeAgain);
    })()
      .catch((error: unknown) => this.options.logger.warn({ event: 'feed_nudge_failed', err: String(error) }, 'nudging the feeds failed; the poll will find the changes'))
      .finally(() => (this.#nudging = undefined));
  }

  async routes(server: ForgesyncServer, context: RouteContext): Promise<void> {
    const { feedRoutes } = await import('./http/routes.js');
    await server.register(feedRoutes(this, context), { prefix: '/api' });
  }

  /** The backstop: looks for feeds with something due every `feedPollInterval`. The change reader is started at once. */
  start(): void {
    warmChangeReads(this.options.database.db);
    void this.poll();
    this.#timer ??= setInterval(() => void this.poll(), this.options.settings.feedPollMs);
    this.#timer.unref();
  }

  async stop(): Promise<void> {
    clearInterval(this.#timer);
    this.#timer = undefined;
    await this.#polling;
    await this.#nudging;
    for (const name of [...this.#sinks.keys()]) await this.#closeSink(name);
  }

  /** One look at every feed: enqueues those with something due, and now and then prunes the change log. */
  poll(): Promise<void> {
    this.#polling ??= (async () => {
      try {
        const now = Date.now();
        const [feeds, head] = await Promise.all([this.repo.list(), headSeq(this.options.database.db)]);
        for (const feed of feeds) if (due(feed, head, now)) await this.#enqueue(feed.name);
        if (now - this.#prunedAt >= PRUNE_MS) {
          this.#prunedAt = now;
          await pruneChangeLog(this.options.database.db, now - this.options.settings.changeLogRetentionMs);
        }
      } catch (error) {
        this.options.logger.warn({ event: 'feed_poll_failed', err: String(error) }, 'looking for due feeds failed; retrying');
      } finally {
        this.#polling = undefined;
      }
    })();
    return this.#polling;
  }

  /** Runs what is due of feed `name`: a full sync's next chunk first, then a partial sync; queues itself again while more is due. */
  async #runDue(name: string, signal: AbortSignal): Promise<void> {
    const feed = await this.repo.find(name);
    if (!feed || feed.paused || feed.disabled) return;
    const now = Date.now();
    let more = false;
    try {
      if ((feed.fullRequestedAt !== null || feed.fullStartedAt !== null) && !backingOff(feed, now)) {
        const result = await this.#runner.run(name, 'full sync', signal);
        more ||= result.ran && result.more;
      }
      const after = await this.repo.find(name);
      if (after && due(after, await headSeq(this.options.database.db), Date.now(), true)) {
        const result = await this.#runner.run(name, 'partial sync', signal);
        more ||= result.ran && result.more;
      }
    } catch (error) {
      await this.#recordError(name, error);
      return;
    }
    if (more && !signal.aborted) await this.#enqueue(name);
  }

  /** `--wait`: runs `operation` here until nothing of it is left; a taken lease is waited out (the holder serves the request). */
  async #runHere(name: string, operation: FeedOperation, timeoutMs: number): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (Date.now() < deadline) {
      let result: RunResult;
      try {
        result = await this.#runner.run(name, operation);
      } catch (error) {
        await this.#recordError(name, error);
        throw error;
      }
      if (result.ran && !result.more) {
        const feed = await this.repo.get(name);
        if (operation === 'partial sync' || (feed.fullRequestedAt === null && feed.fullStartedAt === null)) return;
        if (feed.paused || feed.disabled || result.outcome === 'failed') return;
      }
      if (!result.ran) await sleep(100);
    }
  }

  async #recordError(name: string, error: unknown): Promise<void> {
    const message = String((error as Error)?.message ?? error).slice(0, 2000);
    this.options.logger.warn({ event: 'feed_run_failed', feed: name, err: message }, `feed ${name}: ${message}`);
    await this.repo.recordRunError(name, message, new Date()).catch(() => undefined);
  }

  /** A process that runs no jobs only records: its in-process queue would never be served. */
  #enqueues(): boolean {
    return this.options.runsJobs() || this.options.jobs.shared;
  }

  async #enqueue(name: string): Promise<void> {
    if (this.#enqueues()) await this.options.jobs.enqueue({ kind: FEED_JOB, key: name });
  }

  /**
   * The feed's sink, opened once and kept while its URL, secret and batch
   * stay the same. The secret is looked up on every run: one the operator
   * unbound from the sink's host (or removed) fails the run with the one
   * message and closes the sink, so nothing is sent with it, or without it.
   */
  async #sinkFor(feed: FeedRecord): Promise<FeedSink> {
    let secret: string | undefined;
    try {
      secret = feed.secret === null ? undefined : await this.options.secrets.feedSecretFor(feed.secret, secretTargetOf(validateSinkUrl(feed.sink)));
    } catch (error) {
      await this.#closeSink(feed.name);
      throw error;
    }
    // A digest, not the secret: a rotated secret opens a new sink.
    const signature = `${feed.sink}\u0000${secret === undefined ? '' : createHash('sha256').update(secret).digest('hex')}\u0000${feed.batch}`;
    const cached = this.#sinks.get(feed.name);
    if (cached?.signature === signature) return cached.sink;
    if (cached) await this.#closeSink(feed.name);
    const { feedTimeoutMs: timeoutMs, feedFileRoot: fileRoot, feedFileMaxBytes: maxFileBytes, feedFileMaxAgeMs: maxFileAgeMs } = this.options.settings;
    const sink = openSink(feed.sink, { ...(secret !== undefined ? { secret } : {}), batch: feed.batch, timeoutMs, policy: this.options.policy, fileRoot, maxFileBytes, maxFileAgeMs });
    this.#sinks.set(feed.name, { signature, sink });
    sink.catch(() => this.#sinks.get(feed.name)?.sink === sink && this.#sinks.delete(feed.name));
    return sink;
  }

  async #closeSink(name: string): Promise<void> {
    const cached = this.#sinks.get(name);
    this.#sinks.delete(name);
    if (cached) await (await cached.sink.catch(() => null))?.close().catch(() => undefined);
  }

  async #lag(): Promise<{ feed: string; changes: number; deadLetters: number }[]> {
    const statuses = await this.list();
    return statuses.map((status) => ({ feed: status.name, changes: status.lag.changes, deadLetters: status.deadLetters }));
  }
}

function backingOff(feed: FeedRecord, now: number): boolean {
  return feed.retryAt !== null && feed.retryAt.getTime() > now;
}

/** Whether a feed has something a run should look at now. */
function due(feed: FeedRecord, head: number, now: number, partialOnly = false): boolean {
  if (feed.paused || feed.disabled || backingOff(feed, now)) return false;
  const partial = feed.partialRequested || feed.replayFrom !== null || head > feed.cursor || (feed.pendingAt !== null && feed.pendingAt.getTime() <= now);
  return partial || (!partialOnly && (feed.fullRequestedAt !== null || feed.fullStartedAt !== null));
}
