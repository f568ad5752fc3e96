import { cp } from 'node:fs/promises';
import { setTimeout as sleep } from 'node:timers/promises';
import { removeMirror, mirrorPathFor } from '../git/mirror.js';
import { servedViewOf } from '../git/served-view.js';
import { remoteTarget, validateRemoteUrl } from '../git/url.js';
import type { Job, JobKind } from '../jobs/types.js';
import type { LeaseHolder } from '../leases/types.js';
import type { Logger } from '../logging/logger.js';
import type { RouteContext } from '../server/module-routes.js';
import type { ForgesyncServer } from '../server/app.js';
import { SourceNotFoundError } from '../store/errors.js';
import type { MatchedRequest } from './store/match-requests.js';
import { RegistryRepository } from './store/registry.js';
import { SourceRepository, type SourceFilter } from './store/sources.js';
import type { Source, SourceWithRegistry, SyncTrigger } from '../store/types.js';
import { WebhookDeliveryRepository } from './store/webhook-deliveries.js';
import { validateCredentialName } from '../credentials/store.js';
import { replicationMetrics, syncLagMetrics, type ReplicationMetrics } from './metrics.js';
import { nameFromUrl, validateSourceName } from './names.js';
import { parseCron, parseInterval } from './schedule.js';
import { removeMovedCopies } from './janitor.js';
import { Scheduler } from './scheduler.js';
import { SyncService, syncLeaseKey, type SyncFollower } from './sync.js';
import { SyncFollowers } from './followers.js';
import { Nudger, SYNC_JOB, syncRoom, VERIFY_JOB } from './nudger.js';
import type { Batcher } from '../util/batcher.js';
import { matchRequestBatcher, type MatchRequest } from './webhooks/match-batcher.js';
import { activeTraceCarrier } from '../tracing/index.js';
import { Signal } from '../util/signal.js';
import type { AddSourceInput, DeliveryRun, ReplicationOptions, ResyncTarget, SyncWaitResult, WebhookDelivery } from './options.js';

export type { AddSourceInput, DeliveryRun, ReplicationOptions, ResyncTarget, SyncWaitResult, WebhookDelivery } from './options.js';
import { Verifier } from './verify.js';
import { oncePerDelivery } from './webhooks/once.js';
import { ProjectFollowers, type ProjectFollower } from './webhooks/project-followers.js';
import { ownerName } from '../leases/owner.js';
import { MirrorHousekeeping } from './housekeeping.js';
import { SourceStatusSections, type SourceStatusSection } from './status-sections.js';
export { SYNC_JOB, VERIFY_JOB } from './nudger.js';

// Cron sources are looked at every minute; the cron expression decides when they run.
const CRON_CHECK_INTERVAL_MS = 60_000;
const DEFAULT_REMOVE_WAIT_MS = 30_000;

/**
 * Replication: sources, their registry rows and mirrors, the sync and
 * verification jobs, the scheduler, the sources API and the webhooks. Every
 * trigger only records a request in the registry and nudges a worker; the
 * worker reads the registry, so a lost or duplicated job loses nothing.
 */
export class Replication {
  readonly sources: SourceRepository;
  readonly registry: RegistryRepository;
  readonly syncService: SyncService;
  readonly scheduler: Scheduler;
  readonly verifier: Verifier;
  readonly metrics: ReplicationMetrics;
  readonly jobs: Record<string, JobKind>;
  readonly housekeeping: MirrorHousekeeping;
  readonly #deliveries: WebhookDeliveryRepository;
  readonly #mirrorRemoved = new Signal<string>();
  /** Who acts on GitHub's project deliveries (see webhooks/match.ts). */
  readonly projectFollowers = new ProjectFollowers();
  readonly #followers: SyncFollowers;
  readonly #statusSections = new SourceStatusSections();
  readonly #nudger: Nudger;
  /** Webhook sync requests, grouped (see matchRequestBatcher). */
  readonly #webhookRequests: Batcher<MatchRequest, MatchedRequest[]>;

  constructor(private readonly options: ReplicationOptions) {
    const { database, leases, logger, settings } = options;
    this.sources = new SourceRepository(database);
    this.#followers = new SyncFollowers(logger);
    this.housekeeping = new MirrorHousekeeping({ database, runner: options.runner, logger, metrics: options.metrics, settings });
    this.#followers.add(this.housekeeping);
    this.#statusSections.add(this.housekeeping);
    // A started row is looked at again (did its worker die?) and a lost job swept after two lease ttls.
    this.registry = new RegistryRepository(database, { defaultIntervalMs: settings.syncIntervalMs, startedRecheckMs: 2 * options.leaseTtlMs });
    this.#deliveries = new WebhookDeliveryRepository(database);
    this.#nudger = new Nudger({ jobs: options.jobs, sources: this.sources, registry: this.registry, ...(options.placeSource ? { placeSource: options.placeSource } : {}) });
    this.#webhookRequests = matchRequestBatcher(this.registry, this.#nudger);
    this.metrics = replicationMetrics(options.metrics, () => this.registry.counts());
    syncLagMetrics(options.metrics, () => this.registry.lag());
    this.syncService = new SyncService({
      sources: this.sources,
      registry: this.registry,
      leases,
      runner: options.runner,
      tokenFor: (credential, url) => options.credentials.tokenFor(credential, url),
      logger,
      storage: options.mirrorsDir,
      leaseTtlMs: options.leaseTtlMs,
      backoff: { baseMs: settings.retryBaseMs, maxMs: settings.retryMaxMs },
      onPending: (source) => void this.#nudger.nudge(source, 'retry').catch(() => undefined),
      onElsewhere: (source) => void this.#nudger.nudge(source, 'retry').catch(() => undefined),
      ...(options.localShard !== undefined ? { localShard: options.localShard } : {}),
      ...(options.onChanges ? { onChanges: options.onChanges } : {}),
      onAttempt: ({ trigger, result, durationMs }) => {
        this.metrics.syncs.inc({ result, trigger });
        this.metrics.syncDuration.observe(durationMs / 1000);
      },
      onSkip: () => this.metrics.leaseSkips.inc(),
      afterSync: (synced, signal) => this.#followers.run(synced, signal),
      ...(options.onProgress ? { onProgress: options.onProgress } : {}),
    });
    this.verifier = new Verifier({ registry: this.registry, leases, runner: options.runner, logger, leaseTtlMs: options.leaseTtlMs });
    this.scheduler = new Scheduler({
      registry: this.registry,
      leases,
      syncRoom: () => syncRoom(options.jobs, options.liveShards),
      nudge: (source, trigger) => this.#nudger.nudge(source, trigger),
      nudgeVerify: (source) => this.#nudger.nudge(source, 'verify', VERIFY_JOB),
      logger,
      tickMs: options.tickMs,
      claimMs: 2 * options.leaseTtlMs,
      leaseTtlMs: options.leaseTtlMs,
      verifyIntervalMs: settings.verifyIntervalMs,
    });
    this.jobs = {
      [SYNC_JOB]: { concurrency: settings.maxConcurrentSyncs, sharded: true, run: (job, signal) => this.#runSync(job, signal) },
      [VERIFY_JOB]: { concurrency: settings.maxConcurrentSyncs, sharded: true, run: (job, signal) => this.#runVerify(job, signal) },
    };
  }

  /** The webhook secrets the receivers check; undefined turns a receiver off. */
  get webhookSecrets() {
    const { githubWebhookSecret, gitlabWebhookToken, genericWebhookSecret } = this.options.settings;
    return { github: githubWebhookSecret, gitlab: gitlabWebhookToken, generic: genericWebhookSecret };
  }

  /** Runs `act` for the first delivery of an id only, in every process sharing the registry (see webhooks/once.ts). */
  oncePerDelivery<T>(delivery: WebhookDelivery, act: () => Promise<T>): Promise<DeliveryRun<T>> {
    return oncePerDelivery({ deliveries: this.#deliveries, logger: this.options.logger }, delivery, act);
  }

  get logger(): Logger {
    return this.options.logger;
  }

  async routes(server: ForgesyncServer, context: RouteContext): Promise<void> {
    // Loaded only by a serving process: the CLI's other commands start without the HTTP stack.
    const [{ sourceRoutes }, { webhookRoutes }] = await Promise.all([import('./http/sources.js'), import('./webhooks/index.js')]);
    await server.register(sourceRoutes(this, context), { prefix: '/api' });
    await server.register(webhookRoutes(this, { readerThreads: this.options.settings.webhookReaderThreads }), { prefix: '/hooks' });
  }

  start(): void {
    this.scheduler.start();
  }

  async stop(): Promise<void> {
    await this.scheduler.stop();
  }

  /** Calls `listener` with the path of every mirror deleted from now on (removed or moved away), so that readers of it can let go. */
  onMirrorRemoved(listener: (mirrorPath: string) => void): () => void {
    return this.#mirrorRemoved.listen(listener);
  }

  /** Hands every GitHub delivery about project data (webhooks/github-project.ts) to `follower` before it is answered; the returned function stops that. */
  followProjectDeliveries(follower: ProjectFollower): () => void {
    return this.projectFollowers.add(follower);
  }

  /** Runs `follower` after every sync of a mirror in this process, under the source's lease (see SyncFollower); the returned function stops that. */
  followSyncs(follower: SyncFollower): () => void {
    return this.#followers.add(follower);
  }

  /** Adds a part to every source's `status --json` (see SourceStatusSection); the returned function removes it. */
  addStatusSection(section: SourceStatusSection): () => void {
    return this.#statusSections.add(section);
  }

  /** Every status section's part of each of `sources`, by source id. */
  statusSections(sources: readonly SourceWithRegistry[]): Promise<Map<number, Record<string, unknown>>> {
    return this.#statusSections.describe(sources);
  }

  /** Registers an upstream; its first sync is requested at once. */
  async addSource(input: AddSourceInput): Promise<SourceWithRegistry> {
    const url = this.#validateUrl(input.url);
    const name = validateSourceName(input.name ?? nameFromUrl(url));
    const cron = input.cron ? parseCron(input.cron) : null;
    const intervalMs = cron ? CRON_CHECK_INTERVAL_MS : input.interval ? parseInterval(input.interval) : null;
    const credentialRef = input.credentialRef ? await this.#usableCredential(input.credentialRef, url) : null;
    const shard = (await this.options.placeSource?.(name)) ?? null;
    const source = await this.sources.create({ name, url, credentialRef, intervalMs, cron, shard });
    await this.#nudger.nudge(source, 'manual');
    return source;
  }

  /** Changes a source's URL or schedule; a URL change re-clones on the next sync. */
  async updateSource(name: string, patch: Omit<Partial<AddSourceInput>, 'name'> & { enabled?: boolean }): Promise<SourceWithRegistry> {
    const source = await this.getSource(name);
    const cron = patch.cron ? parseCron(patch.cron) : undefined;
    const url = patch.url !== undefined ? this.#validateUrl(patch.url) : source.url;
    const credentialRef = patch.credentialRef !== undefined ? patch.credentialRef || null : source.credentialRef;
    // The credential must be usable for the URL the source will have (either may change).
    if (credentialRef && (patch.url !== undefined || patch.credentialRef !== undefined)) await this.#usableCredential(credentialRef, url);
    const updated = await this.sources.update(source.name, {
      ...(patch.url !== undefined ? { url } : {}),
      ...(cron ? { cron, intervalMs: CRON_CHECK_INTERVAL_MS } : {}),
      ...(patch.interval ? { intervalMs: parseInterval(patch.interval), cron: null } : {}),
      ...(patch.credentialRef !== undefined ? { credentialRef } : {}),
      ...(patch.enabled !== undefined ? { enabled: patch.enabled } : {}),
    });
    await this.#nudger.nudge(updated, 'manual');
    return updated;
  }

  /**
   * The janitor of shard `localShard`: deletes the copies in this process's
   * storage of sources since moved to another shard, once untouched for
   * `graceMs` (readers of the old copy get that long), each under the
   * source's lease. A directory of an unknown or never-moved source is left
   * alone. Returns the paths removed.
   */
  removeMovedCopies(localShard: string, graceMs: number, now = Date.now()): Promise<string[]> {
    const { mirrorsDir, leases, leaseTtlMs, logger } = this.options;
    return removeMovedCopies({ mirrorsDir, leases, leaseTtlMs, logger, sources: this.sources, onMirrorRemoved: (path) => this.#mirrorRemoved.notify(path) }, { localShard, graceMs, now });
  }

  /** Removes a source and deletes its mirror, under the source's lease so no sync runs meanwhile. */
  async removeSource(name: string, options: { waitMs?: number } = {}): Promise<void> {
    const source = await this.getSource(name);
    const { mirrorsDir, leaseTtlMs } = this.options;
    await this.options.leases.withLease(
      syncLeaseKey(source.id),
      { ttlMs: leaseTtlMs, owner: ownerName(`remove ${source.name}`), waitMs: options.waitMs ?? DEFAULT_REMOVE_WAIT_MS, retryMs: 200 },
      async () => {
        this.#mirrorRemoved.notify(mirrorPathFor(mirrorsDir, source, source.url));
        await removeMirror(mirrorsDir, source, source.url);
        await this.sources.remove(source.name);
      },
    );
    this.options.logger.info({ event: 'source_removed', source: source.name }, `removed ${source.name}`);
  }

  /**
   * Copies a source's bare mirror to `dest` under the source's lease (so no
   * sync changes it meanwhile); false when it has no mirror yet.
   */
  async copyMirror(name: string, dest: string, options: { waitMs?: number } = {}): Promise<boolean> {
    const source = await this.getSource(name);
    const path = source.registry.mirrorPath;
    if (!path) return false;
    return this.options.leases.withLease(
      syncLeaseKey(source.id),
      { ttlMs: this.options.leaseTtlMs, owner: ownerName(`copy ${source.name}`), waitMs: options.waitMs ?? DEFAULT_REMOVE_WAIT_MS, retryMs: 200 },
      async () => {
        // The repository only: not the view clones are served from (see git/served-view.ts).
        const view = servedViewOf(path);
        await cp(path, dest, { recursive: true, errorOnExist: true, force: false, filter: (from) => from !== view });
        return true;
      },
    );
  }

  /** @throws SourceNotFoundError */
  async getSource(name: string): Promise<SourceWithRegistry> {
    return this.sources.get(name);
  }

  /** The source named `name`, or undefined. */
  findSource(name: string): Promise<SourceWithRegistry | undefined> {
    return this.sources.find(name);
  }

  /** Sources sorted by name, filtered by registry state and a search string, a page at a time. */
  listSources(filter: SourceFilter = {}): Promise<SourceWithRegistry[]> {
    return this.sources.list(filter);
  }

  /** Sync jobs running here and waiting, and this process's capacity for them. */
  syncLoad() {
    return this.options.jobs.load(SYNC_JOB);
  }

  /** The current holder of a source's sync lease, if any. */
  leaseHolder(source: Source): Promise<LeaseHolder | null> {
    return this.options.leases.inspect(syncLeaseKey(source.id));
  }

  /**
   * Records a sync request for one source and nudges a worker. `source` is
   * its name, or the source itself when the caller looked it up already (the
   * webhook receivers: no second lookup by name).
   * @returns the new requested_seq.
   * @throws SourceNotFoundError when there is no such source (or it was removed meanwhile).
   */
  async requestSync(source: string | Source, options: { trigger?: SyncTrigger } = {}): Promise<number> {
    const trigger = options.trigger ?? 'library';
    const found = typeof source === 'string' ? await this.getSource(source) : source;
    const seq = await this.registry.request(found.id, trigger);
    await this.#nudger.nudge(found, trigger);
    return seq;
  }

  /**
   * Records a webhook's sync request for every enabled source whose URL has
   * one of the match `keys` (replication/store/match-key.ts) in one statement (shared with
   * the deliveries made meanwhile), and nudges a worker for each: the webhook
   * hot path. Returns those sources (none: nothing recorded).
   */
  requestSyncMatching(keys: readonly string[]): Promise<MatchedRequest[]> {
    return this.#webhookRequests.submit({ keys, trace: activeTraceCarrier() });
  }

  /** Records a sync request on every row the target selects (`forgesync resync`); returns how many rows it touched. */
  async requestSyncMany(target: ResyncTarget, options: { trigger?: SyncTrigger } = {}): Promise<number> {
    const trigger = options.trigger ?? 'manual';
    if (typeof target === 'object' && 'name' in target) {
      await this.requestSync(target.name, { trigger });
      return 1;
    }
    const count = await this.registry.requestMany(target);
    // The active scheduler (here or in another process) nudges workers for them.
    if (count > 0) void this.scheduler.tick();
    return count;
  }

  /** Records a sync request for each of the sources `ids` (a move syncs even a source with nothing to fetch), one gone meanwhile skipped, and nudges. */
  requestSyncByIds(ids: readonly number[], options: { trigger: SyncTrigger }): Promise<void> {
    return this.#nudger.nudgeMany(ids, options.trigger);
  }

  /** Nudges a worker for each of the sources `ids` whose requests are recorded already (just placed on a shard: they had no job). */
  nudge(ids: readonly number[]): Promise<void> {
    return this.#nudger.nudgeMany(ids);
  }

  /**
   * Records a sync request for `name` and serves it: runs the sync here when
   * the source's lease is free, else waits for the holder, which serves
   * requests that arrive during a sync with another round. Ends as soon as a
   * successful round served the request, whoever ran it (`served`), when the
   * round that took it failed, or after `timeoutMs`.
   */
  async sync(name: string, options: { trigger?: SyncTrigger; timeoutMs?: number; pollMs?: number } = {}): Promise<SyncWaitResult> {
    const trigger = options.trigger ?? 'library';
    const timeoutMs = options.timeoutMs ?? 10 * 60_000;
    const pollMs = options.pollMs ?? 100;
    const source = await this.getSource(name);
    const seq = await this.registry.request(source.id, trigger);
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const outcome = await this.syncService.sync(source.id, trigger);
      if (outcome === 'gone') throw new SourceNotFoundError(name);
      const current = await this.getSource(name);
      const row = current.registry;
      // completed_seq only ever moves on success, to the target of the round that succeeded.
      if (row.completedSeq >= seq) return { ...current, served: true };
      // A failed row whose last round took our request: that round failed.
      if (row.state === 'failed' && row.targetSeq >= seq) return { ...current, served: false };
      const left = deadline - Date.now();
      if (left <= 0) return { ...current, served: false };
      await sleep(Math.min(pollMs, left));
    }
  }

  /**
   * A source URL as it is stored: valid, of an allowed protocol, and not
   * naming a refused address outright (`https://169.254.169.254/`,
   * `ssh://0x7f000001/…`). Host names are checked when a sync connects (the
   * addresses they resolve to then are what counts), so nothing is looked up here.
   * @throws InvalidRemoteUrlError; EgressRefusedError
   */
  #validateUrl(input: string): string {
    const url = validateRemoteUrl(input, this.options.protocols);
    const target = remoteTarget(url);
    if (target) this.options.runner.egress.checkLiteral(target.host);
    return url;
  }

  /**
   * Checks that credential `name` exists and is bound to `url`'s host before a
   * source refers to it (the same single message as at sync time).
   */
  async #usableCredential(name: string, url: string): Promise<string> {
    await this.options.credentials.tokenFor(validateCredentialName(name), url);
    return name;
  }

  /** A sync job: the trigger rides in the payload (a hint for logs and metrics). */
  async #runSync(job: Job, signal: AbortSignal): Promise<void> {
    await this.syncService.sync(Number(job.key), (job.payload?.trigger as SyncTrigger | undefined) ?? 'schedule', signal);
  }

  /** A verification job: a mismatch records a request (markVerification) and nudges a sync. */
  async #runVerify(job: Job, signal: AbortSignal): Promise<void> {
    const sourceId = Number(job.key);
    if ((await this.verifier.verify(sourceId, signal)) !== 'mismatch') return;
    const source = await this.sources.findById(sourceId);
    if (source) await this.#nudger.nudge(source, 'verify');
  }
}
