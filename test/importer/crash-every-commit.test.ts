import { spawn } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Forgesync } from '../../src/app/forgesync.js';
import type { ImportCounts } from '../../src/importer/status.js';
import type { ImportFailure } from '../../src/importer/store/failures.js';
import { startFakeGitHub, type FakeGitHub } from '../fake-github/index.js';
import { createTestDatabase, openTestForgesync, testConfig, type TestDatabase } from '../support/harness.js';
import { LOOPBACK_NETWORKS } from '../support/egress.js';
import { testSecret } from '../support/secrets.js';

/*
 * A crash at any commit point of an import loses nothing (issue 25): the
 * import runs in a CLI process (`import github --wait`) that SIGKILLs itself
 * right after its n-th durable write (the test hook
 * FORGESYNC_TEST_KILL_AFTER_COMMITS, src/importer/run/crash-test-hook.ts),
 * for n = 1, 2, … until a run ends before its kill; another process (this
 * one, which never ran it) resumes each after freeing the dead process's
 * leases, and every one must end with exactly what the uninterrupted run
 * stored: each import_objects row (type, key, data), the counts and the
 * failures.
 *
 * The project is the fake's small one: about fifty writes (every list,
 * stage, review, download and profile job), at concurrency 1 so that the
 * n-th write is the same one in every run. Its git sources are left out
 * (`git: false`: their syncs fail, which no import write depends on;
 * replication is proven under kills elsewhere), as their clones would double
 * the time. On SQLite every write is a kill point; on PostgreSQL, where an
 * import takes longer, every other one (the odd ones; resume-durable.test.ts
 * stops runs at the chosen points on both), so that each backend stays well
 * under a minute.
 */

const CLI = fileURLToPath(new URL('../../bin/forgesync.js', import.meta.url));
const TOKEN = testSecret('GITHUB_CRASH_TOKEN');
/** More writes than this: the hook is not counting (or the project grew); fail rather than spawn forever. */
const MAX_WRITES = 150;

interface Exit {
  pid: number;
  code: number | null;
  signal: NodeJS.Signals | null;
  stderr: string;
}

/** Runs the CLI with only `env` (and PATH, HOME): nothing of this machine's FORGESYNC_* leaks in. */
function forgesync(env: Record<string, string>, args: string[]): Promise<Exit> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [CLI, ...args], { env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', ...env }, stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (chunk) => (stderr += chunk));
    child.on('error', reject);
    child.on('close', (code, signal) => resolve({ pid: child.pid!, code, signal, stderr }));
  });
}

/** What an import ended with, object by object. */
interface Result {
  state: string;
  /** `type key data` of every import_objects row, sorted. */
  objects: string[];
  counts: ImportCounts;
  failures: ImportFailure[];
}

async function resultOf(app: Forgesync, name: string): Promise<Result> {
  const status = await app.importer.status(name);
  const record = await app.importer.get(name);
  const rows = await app.kernel.database.db.selectFrom('import_objects').select(['type', 'key', 'data']).where('import_id', '=', record.id).execute();
  return { state: status.state, objects: rows.map((row) => `${row.type} ${row.key} ${row.data}`).sort(), counts: status.counts, failures: status.failures };
}

/** How `result` differs from `clean` (nothing, when the resumed import is exact). */
function differences(result: Result, clean: Result) {
  const have = new Set(result.objects);
  const want = new Set(clean.objects);
  return {
    state: result.state,
    missing: clean.objects.filter((object) => !have.has(object)).map((object) => object.slice(0, 200)),
    extra: result.objects.filter((object) => !want.has(object)).map((object) => object.slice(0, 200)),
    counts: result.counts,
    failures: result.failures,
  };
}

/** Kill points run this many at a time, each lane with a fake GitHub of its own (its profiles, its download counts): the machine has two cores. */
const LANES = 2;
/** Every how many writes a kill point is taken (see above). */
const STRIDE = { sqlite: 1, postgres: 2 } as const;

/** A secrets file with credential GH bound to every fake's API and web hosts. */
function secretsEnv(fakes: readonly FakeGitHub[]): Record<string, string> {
  const hosts = fakes.flatMap((fake) => [new URL(fake.apiUrl).host, new URL(fake.webUrl).host]);
  const file = join(mkdtempSync(join(tmpdir(), 'forgesync-secrets-')), 'secrets.json');
  writeFileSync(file, JSON.stringify({ GH: { token: TOKEN, hosts } }), { mode: 0o600 });
  return { FORGESYNC_SECRETS_FILE: file };
}

describe.each(['sqlite', 'postgres'] as const)('an import killed right after each of its durable writes, on %s', (database) => {
  const fakes: FakeGitHub[] = [];
  let db: TestDatabase;
  let app: Forgesync;
  let env: Record<string, string>;

  beforeAll(async () => {
    // Many full imports of one project: a budget that does not run out.
    for (let lane = 0; lane < LANES; lane++) fakes.push(await startFakeGitHub({ tokens: [TOKEN], limit: 1_000_000, git: false }));
    db = await createTestDatabase(database);
    // The kills are of forgesync, never of the server: what it committed stays whether or not the server waited for its disk.
    if (database === 'postgres') await withPostgres(db.url, (client) => client.query(`ALTER DATABASE ${new URL(db.url).pathname.slice(1)} SET synchronous_commit = off`));
    env = {
      FORGESYNC_DATA_DIR: mkdtempSync(join(tmpdir(), 'forgesync-crash-')),
      FORGESYNC_DATABASE_URL: db.url,
      FORGESYNC_GIT_PROTOCOLS: 'https,ssh,http',
      FORGESYNC_ALLOW_NETWORKS: LOOPBACK_NETWORKS,
      FORGESYNC_LEASE_TTL: '3s',
      FORGESYNC_IMPORT_RETRY_BASE: '20ms',
      ...secretsEnv(fakes),
    };
    // This process resumes the imports (another process than the one killed), and reads what they stored.
    ({ app } = await openTestForgesync(testConfig(db.url, env)));
  });
  afterAll(async () => {
    await app?.close();
    for (const fake of fakes) await fake.close();
    await db?.drop();
  });

  /** The leases a killed process held (its import's, a job's, a source's), released as their lapse would release them. */
  async function releaseLeasesOf(pid: number): Promise<void> {
    for (const holder of await app.kernel.leases.list()) {
      if (holder.owner.pid === pid) await app.kernel.leases.forceRelease(holder.key, { fence: holder.fence });
    }
  }

  /**
   * Kill points `first`, `first + step`, … against `fake`, until a run
   * ends before its kill: that one is the uninterrupted import.
   */
  async function lane(fake: FakeGitHub, first: number, step: number): Promise<{ killed: Map<number, Result>; clean: Result }> {
    const project = `${fake.project.repo.owner}/${fake.project.repo.name}`;
    // Downloading an asset counts up its download_count: each import sees the project as the first did.
    const downloads = fake.project.releases.flatMap((release) => release.assets.map((asset) => ({ asset, count: asset.downloadCount })));
    const killed = new Map<number, Result>();
    for (let n = first; ; n += step) {
      expect(n, 'the import should end before this many writes').toBeLessThanOrEqual(MAX_WRITES);
      for (const { asset, count } of downloads) asset.downloadCount = count;
      // Profiles are kept per API host: forgotten, each import fetches them again, with the same writes as the first.
      await app.kernel.database.db.deleteFrom('github_users').where('api_host', '=', fake.apiUrl).execute();
      const name = `crash-${n}`;
      const args = ['import', 'github', project, '--name', name, '--api-url', fake.apiUrl, '--credential', 'GH', '--concurrency', '1', '--wait', '--json'];
      const run = await forgesync({ ...env, FORGESYNC_TEST_KILL_AFTER_COMMITS: String(n) }, args);
      if (run.signal === null) {
        // Fewer than n writes: not interrupted, this run is what every other must equal.
        expect([n, run.code, run.stderr.match(/.*"level":(40|50).*/g) ?? []]).toEqual([n, 0, []]);
        return { killed, clean: await resultOf(app, name) };
      }
      expect([n, run.signal]).toEqual([n, 'SIGKILL']);
      await releaseLeasesOf(run.pid);
      // Killed after its last write (the run's end), the import is synced: there is nothing to resume.
      if ((await app.importer.get(name)).state !== 'synced') {
        const { outcome } = await app.importer.runHere(name);
        expect([n, outcome]).toEqual([n, 'synced']);
      }
      killed.set(n, await resultOf(app, name));
    }
  }

  it('resumes to exactly what an uninterrupted import stores, whichever write the kill follows', async () => {
    const stride = STRIDE[database];
    const lanes = await Promise.all(fakes.map((fake, index) => lane(fake, 1 + index * stride, LANES * stride)));
    const points = lanes.flatMap(({ killed }) => [...killed.keys()]).sort((a, b) => a - b);
    const last = points.at(-1)!;
    // Every write (every other on PostgreSQL) was a kill point once; the small project has far more than a handful.
    expect(points).toEqual(Array.from({ length: Math.ceil(last / stride) }, (_, index) => 1 + index * stride));
    expect(last).toBeGreaterThanOrEqual(30);
    for (const { killed, clean } of lanes) {
      expect(clean.state).toBe('synced');
      expect(clean.counts).toEqual(lanes[0]!.clean.counts);
      expect(clean.counts.imported.protected_branch).toBe(fakes[0]!.expected().protected_branch);
      for (const [n, result] of killed) expect({ n, ...differences(result, clean) }).toEqual({ n, ...differences(clean, clean) });
    }
  }, 300_000);
});

/** Runs `work` with a client of the PostgreSQL database at `url`. */
async function withPostgres(url: string, work: (client: pg.Client) => Promise<unknown>): Promise<void> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    await work(client);
  } finally {
    await client.end();
  }
}
