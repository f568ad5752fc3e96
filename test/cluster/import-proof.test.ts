// The proof of imports (and their change feed) in distributed mode, like the
// replication proof (proof.test.ts): 1 api + 3 workers (shards a, b, c) + 1
// scheduler as separate `forgesync serve` processes on a private PostgreSQL
// and a private Redis (BullMQ jobs), lease ttl 3 s. One GitHub project (800
// issues and pull requests, 20 ms per answer, the fake GitHub in this
// process) is imported once cleanly (from a fake of its own: its counted
// requests are the budget), then again while an HTTP feed of every import
// change delivers to a receiver in this process and, at random points of the
// import's progress (its counted requests ÷ the clean run's): three random
// workers are SIGKILLed and started again, the worker holding the import's
// coordinator lease is SIGSTOPped for 7 s (longer than the ttl) and
// continued, and the scheduler is SIGKILLed and started again. At the end the
// import is `synced` with exactly the fake's counts, its counted requests stay
// close to the clean run's (see MAX_REQUESTS_RATIO), and every change reached the receiver, in
// order per key, without gaps; the figures are printed on one line (before
// the checks, so a failing run prints them too). FORGESYNC_TEST_PROOF_SEED
// picks the random points (printed); FORGESYNC_TEST_PROOF_KEEP=1 keeps every
// process's log and the fake's request log (requests.json).
// The cluster, the chaos and the request figures are test/support/cluster/import-cluster.ts,
// shared with bench/import.mjs (its chaos row).
// Needs dist/ (npm run build): the processes run bin/forgesync.js.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { importerSettings } from '../../src/importer/settings.js';
import { openLeaseManager } from '../../src/leases/open.js';
import type { LeaseManager } from '../../src/leases/manager.js';
import { generateProject, prng, startFakeGitHub, type FakeGitHub } from '../fake-github/index.js';
import { WebhookReceiver } from '../feeds/sinks/http-receiver.js';
import { expectedCounts, importedCounts } from '../importer/counts.js';
import { ImportChaos, ImportCluster, requestCost } from '../support/cluster/import-cluster.js';
import { requireBuilt } from '../support/cluster/processes.js';
import { RegistryView } from '../support/cluster/registry.js';
import { PostgresInstance, RedisInstance } from '../support/cluster/services.js';
import { eventually as until } from '../support/eventually.js';
import { testSecret } from '../support/secrets.js';

const SHARDS = ['a', 'b', 'c'] as const;
const TTL_MS = 3_000;
const STOP_MS = 7_000;
const LATENCY_MS = 20;
/**
 * Counted requests ÷ the clean run's budget the import may reach with every crash and pause (issue 25's
 * goal), at the default concurrency: a SIGKILL or a stop costs what the process had in flight or
 * answered and not yet committed. (Until the change log stopped numbering changes on one row that every
 * writer waited for, commits queued there and a crash lost the queue: 1.13–1.32 at this concurrency.)
 * What a crash costs is bounded by a worker's share of the requests in flight, not by the project's
 * size: the project (~1,080 counted requests) is large enough that five chaos steps stay inside the
 * goal on a loaded machine (1.04–1.06 on a quiet one). (Until a job read its row under its lease, the
 * jobs a stopped worker had waiting went on when it was continued, though others had done them
 * meanwhile: 1.07–1.08 quiet, 1.106 in a loaded CI run.)
 */
const MAX_REQUESTS_RATIO = 1.1;
const ADMIN_TOKEN = testSecret('IMPORT_PROOF_ADMIN_TOKEN');
const CLUSTER_TOKEN = testSecret('IMPORT_PROOF_CLUSTER_TOKEN');
const GITHUB_TOKEN = testSecret('IMPORT_PROOF_GITHUB_TOKEN');
const SEED = Number(process.env.FORGESYNC_TEST_PROOF_SEED ?? Date.now() % 1_000_000);

/** One change of the change log: its number and the key it is ordered by. */
interface Change {
  seq: number;
  key: string;
}

/** What the receiver got, judged against the change log: per key in order, each change at least once. */
function judgeDelivery(changes: readonly Change[], received: readonly { event: { sequence?: unknown } }[]) {
  const keyOf = new Map(changes.map((change) => [change.seq, change.key]));
  const perKey = new Map<string, { highest: number; seen: Set<number> }>();
  let outOfOrder = 0;
  let duplicates = 0;
  let unknown = 0;
  for (const { event } of received) {
    const seq = Number(event.sequence);
    const key = keyOf.get(seq);
    if (key === undefined) {
      unknown++;
      continue;
    }
    const seen = perKey.get(key) ?? { highest: 0, seen: new Set<number>() };
    perKey.set(key, seen);
    // At least once: a change sent again (its batch's acknowledgement lost with a killed worker) is a duplicate, not disorder.
    if (seen.seen.has(seq)) duplicates++;
    else if (seq < seen.highest) outOfOrder++;
    seen.seen.add(seq);
    seen.highest = Math.max(seen.highest, seq);
  }
  const missing = changes.filter((change) => !perKey.get(change.key)?.seen.has(change.seq)).length;
  return { delivered: changes.length - missing, missing, outOfOrder, duplicates, unknown, keys: new Set(changes.map((change) => change.key)).size };
}

describe('an import and its change feed in distributed mode, under worker kills, a worker stop and a scheduler kill', () => {
  let root: string;
  let redis: RedisInstance | undefined;
  let postgres: PostgresInstance | undefined;
  let fake: FakeGitHub | undefined;
  /** The same project on a fake of its own (its own API host, so no profile is shared): imported once without chaos, for its request count. */
  let cleanFake: FakeGitHub | undefined;
  let receiver: WebhookReceiver | undefined;
  let registry: RegistryView | undefined;
  let leases: LeaseManager | undefined;
  let cluster: ImportCluster | undefined;

  beforeAll(async () => {
    requireBuilt();
    root = mkdtempSync(join(tmpdir(), 'forgesync-import-proof-'));
    redis = await RedisInstance.start();
    postgres = await PostgresInstance.start();
    const project = () => generateProject({ issues: 400, pulls: 400, commentsPerIssue: 3, reviewCommentsPerPull: 2, reviewsPerPull: 1, users: 200, seed: 25 });
    fake = await startFakeGitHub({ tokens: [GITHUB_TOKEN], limit: 10_000_000, latencyMs: LATENCY_MS, project: project() });
    cleanFake = await startFakeGitHub({ tokens: [GITHUB_TOKEN], limit: 10_000_000, latencyMs: LATENCY_MS, project: project() });
    receiver = await WebhookReceiver.start();
    registry = new RegistryView(postgres.url);
    leases = await openLeaseManager(redis.url);
  }, 120_000);

  afterAll(async () => {
    await cluster?.stop();
    await leases?.close();
    await registry?.close();
    await receiver?.stop();
    await fake?.close();
    await cleanFake?.close();
    await redis?.stop();
    await postgres?.stop();
    if (root && process.env.FORGESYNC_TEST_PROOF_KEEP) console.log(`import proof: kept ${root}`);
    else if (root) rmSync(root, { recursive: true, force: true });
  }, 60_000);

  it('ends synced with exact counts, within the request budget, every change delivered in order', async () => {
    const started = Date.now();
    const github = fake!;
    // GH for the import under chaos, GH_CLEAN for the clean one: each credential bound to its fake's hosts.
    cluster = new ImportCluster({
      root,
      databaseUrl: postgres!.url,
      redisUrl: redis!.url,
      jobsPrefix: 'importproof',
      shards: SHARDS,
      ttlMs: TTL_MS,
      adminToken: ADMIN_TOKEN,
      clusterToken: CLUSTER_TOKEN,
      githubToken: GITHUB_TOKEN,
      credentials: { GH: github, GH_CLEAN: cleanFake! },
    });
    await cluster.start();

    // The feed first, so its opening full sync finds nothing and every import change goes by partial syncs.
    const feed = await cluster.api('/api/feeds', { name: 'imports', sink: receiver!.url(), types: ['dev.forgesync.import.*'] });
    expect(feed.status, JSON.stringify(feed.body)).toBe(201);

    // The clean run: the same project, no chaos; what it counts is the budget the import under chaos is held to.
    const cleanStarted = Date.now();
    await cluster.startImport(cleanFake!, { name: 'clean', credentials: ['GH_CLEAN'] });
    const clean = await cluster.untilSynced('clean', 60_000);
    expect(importedCounts(clean)).toEqual(expectedCounts(cleanFake!));
    const budget = cleanFake!.stats().counted;
    const cleanS = (Date.now() - cleanStarted) / 1000;

    const chaosStarted = Date.now();
    const name = await cluster.startImport(github, { credentials: ['GH'] });
    const statusOf = () => cluster!.status(name);

    // The chaos, each step at a random point of the import's progress (its counted requests ÷ the clean run's).
    const chaos = new ImportChaos({ processes: cluster, fake: github, budget, importName: name, leases: leases!, random: prng(SEED), stopMs: STOP_MS });
    const driver = Promise.all([chaos.killWorker(0.05, 0.15), chaos.stopCoordinator(0.15, 0.3), chaos.killScheduler(0.3, 0.45), chaos.killWorker(0.45, 0.6), chaos.killWorker(0.6, 0.75)]);

    const expected = expectedCounts(github);
    const final = await cluster.untilSyncedWith(name, expected, 75_000).catch(async (error: Error) => {
      chaos.end();
      await driver.catch(() => undefined);
      const status = await statusOf().catch(() => null);
      throw new Error(`${error.message}; chaos ${chaos.steps.join(' ')}; status ${JSON.stringify(status)}`);
    });
    chaos.end();
    await driver;
    const importedAt = Date.now();

    // Every change the import recorded reaches the receiver (lag 0).
    const changes = async () =>
      (await registry!.query<{ seq: string; change_key: string }>(`select seq, change_key from change_log where module = 'importer' order by seq`)).map((row) => ({ seq: Number(row.seq), key: row.change_key }));
    const delivery = await until('every import change delivered', async () => {
      const judged = judgeDelivery(await changes(), receiver!.accepted);
      return judged.missing === 0 ? judged : null;
    }, 30_000, 250).catch(async (error: Error) => {
      throw new Error(`${error.message}: ${JSON.stringify(judgeDelivery(await changes(), receiver!.accepted))}`);
    });

    // Kept with the logs: which requests were asked again, and when, against the chaos's moments.
    if (process.env.FORGESYNC_TEST_PROOF_KEEP) writeFileSync(join(root, 'requests.json'), JSON.stringify({ chaosLog: chaos.log, requests: github.requests }));
    const { counted, ratio: requestsRatio, refetched } = requestCost(github, budget);
    const processes = cluster.processes;
    const figures = {
      imports: 1,
      processes: processes.length,
      concurrency: importerSettings.importConcurrency.default,
      seed: SEED,
      chaos: chaos.steps.join(','),
      objects: Object.values(final.counts.imported).reduce((sum, n) => sum + n, 0),
      countsExact: JSON.stringify(importedCounts(final)) === JSON.stringify(expected),
      failuresListed: final.failures.length,
      requestsCounted: counted,
      requestsClean: budget,
      requestsRatio: requestsRatio.toFixed(3),
      refetched,
      importerCounted: final.requests.counted,
      changesRecorded: delivery.delivered + delivery.missing,
      changesDelivered: delivery.delivered,
      keys: delivery.keys,
      outOfOrder: delivery.outOfOrder,
      gaps: delivery.missing,
      duplicates: delivery.duplicates,
      cleanImportS: cleanS.toFixed(1),
      chaosImportS: ((importedAt - chaosStarted) / 1000).toFixed(1),
      fakeBudget: github.budget({ perPage: 100 }),
      durationS: Math.round((Date.now() - started) / 1000),
    };
    console.log(`import proof: ${Object.entries(figures).map(([key, value]) => `${key}=${value}`).join(' ')}`);

    expect(chaos.steps).toHaveLength(5);
    expect(importedCounts(final)).toEqual(expected);
    expect(final.failures.filter((failure) => !/404/.test(failure.error))).toEqual([]);
    expect(requestsRatio).toBeLessThanOrEqual(MAX_REQUESTS_RATIO);
    expect(delivery.outOfOrder).toBe(0);
    expect(delivery.unknown).toBe(0);
    expect(processes.filter((child) => !child.running).map((child) => child.name)).toEqual([]);
    expect(processes.flatMap((child) => child.fatalLines())).toEqual([]);
  }, 150_000);
});
