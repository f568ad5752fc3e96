// Imports in distributed mode, shared by the proof (test/cluster/import-proof.test.ts)
// and the benchmark (bench/import.mjs, compiled to dist-test/ by tsconfig.fake.json):
// a cluster of `forgesync serve` processes (1 api, N workers, 1 scheduler) on
// one PostgreSQL database and one Redis, imports started and watched through
// the api, the chaos driven at points of an import's progress (worker kills,
// a stop of the coordinator's holder longer than the lease ttl, a scheduler
// kill), and what the chaos cost in requests. Nothing here asserts: the test
// and the bench judge what it returns, each by its own bar.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { importLeaseKey } from '../../../src/importer/run/coordinator.js';
import type { ImportStatusJson } from '../../../src/importer/status.js';
import type { LeaseManager } from '../../../src/leases/manager.js';
import type { FakeGitHub } from '../../fake-github/index.js';
import { importedCounts } from '../../importer/counts.js';
import { LOOPBACK_NETWORKS } from '../egress.js';
import { eventually as until } from '../eventually.js';
import { ForgesyncProcess } from './processes.js';

export interface ImportClusterOptions {
  /** Data dirs, logs and the secrets file go here. */
  root: string;
  databaseUrl: string;
  redisUrl: string;
  /** The BullMQ queue prefix (one per cluster sharing a Redis database). */
  jobsPrefix: string;
  /** One worker per shard id, named `worker-<id>`. */
  shards: readonly string[];
  ttlMs: number;
  adminToken: string;
  clusterToken: string;
  /** The GitHub token every credential holds. */
  githubToken: string;
  /** Credential name → the fake its token is bound to (its API and web hosts). */
  credentials: Record<string, FakeGitHub>;
  /** FORGESYNC_IMPORT_CONCURRENCY; unset, the default. */
  concurrency?: number;
}

/** 1 api, one worker per shard and 1 scheduler; `processes` lists them all (started or not) for the final stop. */
export class ImportCluster {
  readonly processes: ForgesyncProcess[] = [];
  readonly workers: ForgesyncProcess[] = [];
  #scheduler: ForgesyncProcess | undefined;
  #apiUrl: string | undefined;
  readonly #secretsFile: string;

  constructor(readonly options: ImportClusterOptions) {
    mkdirSync(options.root, { recursive: true });
    this.#secretsFile = join(options.root, 'secrets.json');
    const bound = (target: FakeGitHub) => ({ token: options.githubToken, hosts: [new URL(target.apiUrl).host, new URL(target.webUrl).host] });
    writeFileSync(this.#secretsFile, JSON.stringify(Object.fromEntries(Object.entries(options.credentials).map(([name, target]) => [name, bound(target)]))), { mode: 0o600 });
  }

  get apiUrl(): string {
    if (!this.#apiUrl) throw new Error('the cluster is not started');
    return this.#apiUrl;
  }

  get scheduler(): ForgesyncProcess {
    if (!this.#scheduler) throw new Error('the cluster is not started');
    return this.#scheduler;
  }

  /** The api first (it runs the migrations, before the others open the same database), then the workers and the scheduler together. */
  async start(): Promise<void> {
    const api = this.#serve('api', ['--role', 'api', '--port', '0', '--host', '127.0.0.1']);
    this.#apiUrl = (await api.start())!;
    this.workers.push(...this.options.shards.map((id) => this.#serve(`worker-${id}`, ['--role', 'worker'], { FORGESYNC_SHARD: id })));
    this.#scheduler = this.#serve('scheduler', ['--role', 'scheduler']);
    await Promise.all([...this.workers.map((worker) => worker.start()), this.#scheduler.start()]);
  }

  /** SIGTERM to every process (continued first if stopped). */
  async stop(): Promise<void> {
    await Promise.all(this.processes.map((child) => child.stop()));
  }

  #env(name: string, extra: Record<string, string>): Record<string, string> {
    const { root, databaseUrl, redisUrl, jobsPrefix, ttlMs, adminToken, clusterToken, concurrency } = this.options;
    const dataDir = join(root, name);
    mkdirSync(dataDir, { recursive: true });
    return {
      FORGESYNC_DATA_DIR: dataDir,
      FORGESYNC_DATABASE_URL: databaseUrl,
      FORGESYNC_LEASE_URL: redisUrl,
      FORGESYNC_JOBS_URL: `${redisUrl}/0?prefix=${jobsPrefix}`,
      FORGESYNC_LEASE_TTL: `${ttlMs / 1000}s`,
      FORGESYNC_SCHEDULER_TICK: '200ms',
      FORGESYNC_IMPORT_RETRY_BASE: '200ms',
      FORGESYNC_FEED_RETRY_BASE: '200ms',
      FORGESYNC_FEED_RETRY_MAX: '2s',
      FORGESYNC_GIT_PROTOCOLS: 'https,http',
      FORGESYNC_ALLOW_NETWORKS: LOOPBACK_NETWORKS,
      FORGESYNC_ADMIN_TOKEN: adminToken,
      FORGESYNC_CLUSTER_TOKEN: clusterToken,
      FORGESYNC_SECRETS_FILE: this.#secretsFile,
      ...(concurrency === undefined ? {} : { FORGESYNC_IMPORT_CONCURRENCY: String(concurrency) }),
      ...extra,
    };
  }

  #serve(name: string, args: string[], extra: Record<string, string> = {}): ForgesyncProcess {
    const child = new ForgesyncProcess(name, args, this.#env(name, extra), join(this.options.root, `${name}.log`));
    this.processes.push(child);
    return child;
  }

  /** A request to the api as its admin: GET, or POST with a JSON body. */
  async api(path: string, body?: unknown): Promise<{ status: number; body: Record<string, unknown> }> {
    const response = await fetch(`${this.apiUrl}${path}`, {
      method: body === undefined ? 'GET' : 'POST',
      headers: { authorization: `Bearer ${this.options.adminToken}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    return { status: response.status, body: (await response.json()) as Record<string, unknown> };
  }

  /** Starts an import of `target`'s project (`extra`: name, credentials, …); its name. */
  async startImport(target: FakeGitHub, extra: Record<string, unknown>): Promise<string> {
    const created = await this.api('/api/imports', { project: `${target.project.repo.owner}/${target.project.repo.name}`, apiUrl: target.apiUrl, ...extra });
    if (created.status !== 202) throw new Error(`POST /api/imports answered ${created.status}: ${JSON.stringify(created.body)}`);
    return String(created.body.name);
  }

  async status(name: string): Promise<ImportStatusJson> {
    return (await this.api(`/api/imports/${name}`)).body as unknown as ImportStatusJson;
  }

  /** Resolves with the import's status once it is `synced`. */
  untilSynced(name: string, timeoutMs: number): Promise<ImportStatusJson> {
    return until(`the import ${name} synced`, async () => {
      const status = await this.status(name);
      return status.state === 'synced' ? status : null;
    }, timeoutMs, 250);
  }

  /**
   * Resolves with the import's status once it is `synced` with exactly
   * `expected` (per type); throws at once when it failed with nothing to
   * resume it (no retryAt: it would stay so) rather than at the timeout.
   */
  untilSyncedWith(name: string, expected: Record<string, number>, timeoutMs: number): Promise<ImportStatusJson> {
    return until(
      'the import synced with every object',
      async () => {
        const status = await this.status(name);
        if (status.state === 'failed' && status.retryAt === null) throw new Error(`the import failed for good at stage ${status.stage}: ${status.failure}`);
        return status.state === 'synced' && JSON.stringify(importedCounts(status)) === JSON.stringify(expected) ? status : null;
      },
      timeoutMs,
      250,
    );
  }
}

export interface ImportChaosOptions {
  processes: ImportCluster;
  /** The fake the import under chaos fetches from: its counted requests ÷ `budget` is the import's progress. */
  fake: FakeGitHub;
  budget: number;
  /** The import under chaos. */
  importName: string;
  /** Reads the coordinator's lease (its holder's pid). */
  leases: Pick<LeaseManager, 'inspect'>;
  random: () => number;
  /** How long a stopped worker stays stopped (longer than the lease ttl). */
  stopMs: number;
}

/**
 * The chaos of the proof, each step at a random point of the import's
 * progress (`low`–`high`, its counted requests ÷ the clean run's) and each on
 * its own (a stop lasts `stopMs`; a killed worker takes a while to start
 * again), never on a worker already down. Start the steps together
 * (Promise.all); end() once the import is judged done, so steps whose point
 * was not reached give up.
 */
export class ImportChaos {
  /** What was done, in order: `kill:worker-b@37%`, `stop:worker-a(coordinator)@18%`. */
  readonly steps: string[] = [];
  readonly log: { what: string; at: number }[] = [];
  readonly #down = new Set<ForgesyncProcess>();
  #ended = false;

  constructor(private readonly options: ImportChaosOptions) {}

  progress(): number {
    return this.options.fake.stats().counted / this.options.budget;
  }

  end(): void {
    this.#ended = true;
  }

  /** SIGKILLs a random worker and starts it again. */
  async killWorker(low: number, high: number): Promise<void> {
    if (!(await this.#at(low, high))) return;
    const victim = this.#pick(this.#up());
    this.#record(`kill:${victim.name}@${this.#percent()}`);
    await this.#outOfService(victim, async () => {
      await victim.crash();
      await victim.start();
    });
  }

  /** SIGSTOPs the worker holding the import's coordinator lease (any worker when it is between holders) for stopMs, then SIGCONT. */
  async stopCoordinator(low: number, high: number): Promise<void> {
    if (!(await this.#at(low, high))) return;
    const holder = await this.options.leases.inspect(importLeaseKey(this.options.importName));
    const coordinator = this.#up().find((worker) => worker.child?.pid === holder?.owner.pid);
    const victim = coordinator ?? this.#pick(this.#up());
    this.#record(`stop:${victim.name}${coordinator ? '(coordinator)' : ''}@${this.#percent()}`);
    await this.#outOfService(victim, async () => {
      victim.signal('SIGSTOP');
      await sleep(this.options.stopMs);
      victim.signal('SIGCONT');
    });
  }

  /** SIGKILLs the scheduler and starts it again. */
  async killScheduler(low: number, high: number): Promise<void> {
    if (!(await this.#at(low, high))) return;
    this.#record(`kill:scheduler@${this.#percent()}`);
    await this.options.processes.scheduler.crash();
    await this.options.processes.scheduler.start();
  }

  /** Waits for a random point in `low`–`high`; false when the import was judged done first. */
  async #at(low: number, high: number): Promise<boolean> {
    const point = low + this.options.random() * (high - low);
    await until(`the import at ${Math.round(point * 100)} % of its requests`, () => this.progress() >= point || this.#ended, 120_000, 10);
    return !this.#ended;
  }

  #up(): ForgesyncProcess[] {
    return this.options.processes.workers.filter((worker) => !this.#down.has(worker));
  }

  #pick<T>(list: readonly T[]): T {
    return list[Math.floor(this.options.random() * list.length)]!;
  }

  #percent(): string {
    return `${Math.round(this.progress() * 100)}%`;
  }

  #record(what: string): void {
    this.steps.push(what);
    this.log.push({ what, at: Date.now() });
  }

  async #outOfService(victim: ForgesyncProcess, what: () => Promise<void>): Promise<void> {
    this.#down.add(victim);
    try {
      await what();
    } finally {
      this.#down.delete(victim);
    }
  }
}

/**
 * What an import cost `fake` against the clean run's `budget`: its counted
 * requests, their ratio, and the requests answered more than once (what
 * crashes and stops cost: in flight, or answered and not yet written).
 */
export function requestCost(fake: FakeGitHub, budget: number): { counted: number; ratio: number; refetched: number } {
  const counted = fake.stats().counted;
  const answers = new Map<string, number>();
  for (const entry of fake.requests) if (entry.counted) answers.set(`${entry.path}?${entry.query}`, (answers.get(`${entry.path}?${entry.query}`) ?? 0) + 1);
  const refetched = [...answers.values()].reduce((sum, n) => sum + n - 1, 0);
  return { counted, ratio: counted / budget, refetched };
}
