import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sql, type Compilable } from 'kysely';
import pg from 'pg';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { FileHosts } from '../../src/importer/attachments/scan.js';
import type { GithubClient } from '../../src/importer/github/client.js';
import { zeroCounts, type RequestCounts } from '../../src/importer/github/request-counts.js';
import { RunContext } from '../../src/importer/run/context.js';
import { ImportRepository, type ImportRecord } from '../../src/importer/store/imports.js';
import { StageWaiter } from '../../src/importer/store/jobs.js';
import { openDatabase, type Database } from '../../src/store/database.js';
import { guardedList, runBatch, type Statement } from '../../src/store/batch.js';
import { postgresUrlWithLimits, type SessionLimits } from '../../src/util/database-sessions.js';
import { openLeaseManager } from '../../src/leases/open.js';
import { createLogger } from '../../src/logging/logger.js';
import { eventually } from '../support/eventually.js';
import { POSTGRES_URL, sqliteBackend } from '../store/backends.js';

/*
 * Every writer of an import used to update the one `imports` row to pass its
 * guard (and to add its progress), so each waited for the row's lock in turn,
 * and one paused inside its transaction (SIGSTOP) held all of them for as long
 * as it was paused. Here "a paused process" is a session of its own that ran
 * the first statements of a batch exactly as a writer does and then sends
 * nothing, with the session limits forgesync's processes get.
 */

const LIMITS: SessionLimits = { idleInTransactionTimeoutMs: 1_500, lockTimeoutMs: 20_000, statementTimeoutMs: 30_000 };
const STAGE = 'reviews';

const schema = `t_${randomBytes(6).toString('hex')}`;
let database: Database;
let imports: ImportRepository;
let waiter: StageWaiter;
const clients: pg.Client[] = [];

beforeAll(async () => {
  database = await openDatabase(POSTGRES_URL, { schema, session: LIMITS });
  imports = new ImportRepository(database);
  waiter = new StageWaiter(database.db);
});

afterAll(async () => {
  for (const client of clients) await client.end().catch(() => {});
  await database?.close();
  const admin = new pg.Client({ connectionString: POSTGRES_URL });
  await admin.connect();
  await admin.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
  await admin.end();
});

/** `guards` then `steps` as one guarded list (see store/batch.ts): true when written, null when refused. */
function writeGuarded(db: Database['db'], guards: readonly Statement[], steps: readonly Statement[]): Promise<true | null> {
  return runBatch(db, guardedList({ guards, steps }));
}

/** A batch begun on a session of its own, as a writer in another process begins it, and then left idle in its transaction. */
interface PausedBatch {
  pid: number;
  /** What the server told the session when it ended it. */
  errors: (Error & { code?: string })[];
  commit(): Promise<void>;
}

async function pausedBatch(statements: readonly Compilable[]): Promise<PausedBatch> {
  const client = new pg.Client({ connectionString: postgresUrlWithLimits(POSTGRES_URL, LIMITS, [`-c search_path=${schema}`]) });
  clients.push(client);
  const errors: (Error & { code?: string })[] = [];
  client.on('error', (error) => errors.push(error));
  await client.connect();
  const { rows } = await client.query<{ pid: number }>('select pg_backend_pid() as pid');
  await client.query('begin');
  for (const statement of statements) {
    const compiled = statement.compile();
    await client.query(compiled.sql, compiled.parameters as unknown[]);
  }
  return { pid: rows[0]!.pid, errors, commit: async () => void (await client.query('commit')) };
}

/** The state of session `pid` (`idle in transaction`, …), or null once it is gone. */
async function sessionState(pid: number): Promise<string | null> {
  const { rows } = await sql<{ state: string }>`select state from pg_stat_activity where pid = ${pid}`.execute(database.db);
  return rows[0]?.state ?? null;
}

/** Sessions of this database waiting for a lock right now. */
async function lockWaits(): Promise<number> {
  const { rows } = await sql<{ n: number }>`select count(*)::int as n from pg_locks l join pg_stat_activity a on a.pid = l.pid where not l.granted and a.datname = current_database()`.execute(
    database.db,
  );
  return rows[0]!.n;
}

/**
 * Runs `write` while a batch stays open, looking at pg_locks until it
 * settles: whether it was ever seen waiting for a lock (no clock involved).
 */
async function whileOpen<T>(write: Promise<T>): Promise<{ result: T; waited: boolean }> {
  let settled = false;
  const done = write.finally(() => {
    settled = true;
  });
  let waited = false;
  const deadline = Date.now() + 5_000;
  while (!settled && Date.now() < deadline) {
    if ((await lockWaits()) > 0) waited = true;
    if (waited) break;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  return { result: waited ? (undefined as T) : await done, waited };
}

const counts = (total: number): RequestCounts => ({ ...zeroCounts(), total, counted: total });

/** A job's batch, as ObjectJobs writes it: the import's guard, the job's own fenced row, its progress. */
function jobBatch(record: ImportRecord, key: string, total: number): { guards: Compilable[]; steps: Compilable[] } {
  return {
    guards: [imports.jobGuardStep(record.id, record.run), waiter.finishStep(record.id, key, record.run, 1n, { state: 'done' }, Date.now())],
    steps: [imports.progressStep(record.id, Date.now(), counts(total), null)],
  };
}

/** A coordinator's page batch under fence `fence`, as RunContext writes it once its fence is stored. */
function pageBatch(record: ImportRecord, fence: bigint, total: number): { guards: Compilable[]; steps: Compilable[] } {
  return { guards: [imports.guardStep({ importId: record.id, run: record.run, fence, hold: 'share' })], steps: [imports.progressStep(record.id, Date.now(), counts(total), [])] };
}

let record: ImportRecord;
beforeEach(async () => {
  const name = `p${randomBytes(4).toString('hex')}`;
  const created = await imports.create({ name, owner: 'o', repo: name, apiUrl: 'https://api.github.com', credentials: [], concurrency: 4, intervalMs: null });
  record = (await imports.claim(created.id, 5n))!;
  await waiter.add(record.id, STAGE, record.run, ['r1', 'r2', 'r3']);
});

describe.sequential('no hot row: writers of one import on PostgreSQL', () => {
  it('two jobs committing at once never wait for each other, nor for a page of the coordinator', async () => {
    const first = jobBatch(record, 'r1', 1);
    const open = await pausedBatch([...first.guards, ...first.steps]);

    const second = jobBatch(record, 'r2', 2);
    const job = await whileOpen(writeGuarded(database.db, second.guards, second.steps));
    expect(job.waited, 'the second job waited for a lock the first one holds').toBe(false);
    expect(job.result).toBe(true);

    const page = pageBatch(record, 5n, 4);
    const coordinator = await whileOpen(writeGuarded(database.db, page.guards, page.steps));
    expect(coordinator.waited, "the coordinator's page waited for a lock the job holds").toBe(false);
    expect(coordinator.result).toBe(true);

    await open.commit();
    expect((await waiter.progress(record.id, STAGE, record.run)).done).toBe(2);
    // The status adds every batch's requests up, as the counters on the row did.
    expect((await imports.findById(record.id))?.requests.total).toBe(7);
  });

  it('a batch paused inside its transaction holds no one; the server ends it, and a newer holder then fences it out', async () => {
    const stale = pageBatch(record, 5n, 100);
    const paused = await pausedBatch([...stale.guards, ...stale.steps]);
    const pausedJob = await pausedBatch([...jobBatch(record, 'r1', 100).guards]);

    // Other jobs and pages of the import go on while both are paused.
    const job = jobBatch(record, 'r2', 2);
    expect(await writeGuarded(database.db, job.guards, job.steps)).toBe(true);
    const page = pageBatch(record, 5n, 3);
    expect(await writeGuarded(database.db, page.guards, page.steps)).toBe(true);
    expect(await sessionState(paused.pid)).toBe('idle in transaction');
    expect(await sessionState(pausedJob.pid)).toBe('idle in transaction');
    const during = await imports.findById(record.id);
    expect(during?.requests.total).toBe(5);
    expect(during?.progressAt).toBeGreaterThanOrEqual(record.progressAt ?? 0);

    // A newer holder taking the import waits for the stale batch in flight (it must not commit after the takeover)…
    const takeover = imports.claim(record.id, 6n);
    await eventually('the takeover to wait for the paused batch', async () => (await lockWaits()) > 0);
    // …which the server ends after idle_in_transaction_session_timeout, freeing it.
    await eventually('the paused sessions to be ended', async () => (await sessionState(paused.pid)) === null && (await sessionState(pausedJob.pid)) === null, 15_000);
    expect((await takeover)?.fence).toBe(6n);
    await eventually('the paused session to be told', () => paused.errors.length > 0);
    expect(paused.errors[0]?.code).toBe('25P03');

    // Nothing the paused batches wrote stayed, and when the stale holder wakes up its writes are refused.
    expect((await waiter.find(record.id, 'r1'))?.state).toBe('pending');
    await expect(paused.commit()).rejects.toThrow();
    expect(await writeGuarded(database.db, pageBatch(record, 5n, 1).guards, [])).toBeNull();
    expect(await writeGuarded(database.db, pageBatch(record, 6n, 1).guards, [])).toBe(true);
    expect((await imports.findById(record.id))?.requests.total).toBe(5);
  });

  it("a coordinator's batches share the row once its fence is stored, and take it to store a raised fence", async () => {
    const dir = mkdtempSync(join(tmpdir(), 'forgesync-leases-'));
    const leases = await openLeaseManager(`sqlite:${join(dir, 'leases.db')}`);
    try {
      // The lease store forgot its counters: this holder's fence (1) is below the one stored by the last (5).
      const lease = await leases.acquire(`import:github:${record.name}`, { ttlMs: 60_000 });
      expect(lease.fence).toBeLessThan(5n);
      const client = { counts: { ...zeroCounts(), total: 2 }, budgets: () => [] } as unknown as GithubClient;
      const hosts = new FileHosts(record.apiUrl, undefined);
      const ctx = new RunContext({ record, db: database.db, imports, client, lease, logger: createLogger({ level: 'silent' }), signal: new AbortController().signal, hosts, concurrency: 4, retry: { retries: 0, baseMs: 10 } });
      await ctx.commit([]);
      // Refused under 1, the batch was written again under a fence raised above 5, and that fence stored.
      const raised = (await imports.findById(record.id))!.fence!;
      expect(raised).toBe(lease.fence);
      expect(raised).toBeGreaterThan(5n);
      // So the holder before it, still at 5, is fenced out from now on.
      expect(await writeGuarded(database.db, pageBatch(record, 5n, 1).guards, [])).toBeNull();
      // Later batches only compare: one held open does not keep the next from committing.
      const open = await pausedBatch(pageBatch(record, raised, 1).guards);
      const next = await whileOpen(ctx.commit([]));
      expect(next.waited).toBe(false);
      await open.commit();
      expect((await imports.findById(record.id))?.requests.total).toBe(2);
    } finally {
      await leases.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('the coordinator folds the progress rows into one; the sums stay the same', async () => {
    for (const [index, key] of ['r1', 'r2', 'r3'].entries()) {
      const job = jobBatch(record, key, index + 1);
      expect(await writeGuarded(database.db, job.guards, job.steps)).toBe(true);
    }
    const page = pageBatch(record, 5n, 10);
    expect(await writeGuarded(database.db, page.guards, page.steps)).toBe(true);
    const before = await imports.findById(record.id);
    await imports.compactProgress(record.id);
    const after = await imports.findById(record.id);
    expect(after?.requests).toEqual(before?.requests);
    expect(after?.requests.total).toBe(16);
    expect(after?.progressAt).toBe(before?.progressAt);
    expect(after?.rate).toEqual([]);
    const rows = await database.db.selectFrom('import_progress').select('id').where('import_id', '=', record.id).execute();
    expect(rows).toHaveLength(1);
  });
});

describe('progress rows on SQLite', () => {
  it('add up, and fold into one with the same sums', async () => {
    const target = await sqliteBackend.fresh();
    const sqlite = await target.open();
    try {
      const repository = new ImportRepository(sqlite);
      const jobs = new StageWaiter(sqlite.db);
      const created = await repository.create({ name: 'lite', owner: 'o', repo: 'lite', apiUrl: 'https://api.github.com', credentials: [], concurrency: 4, intervalMs: null });
      const claimed = (await repository.claim(created.id, 5n))!;
      await jobs.add(claimed.id, STAGE, claimed.run, ['r1']);
      const budget = [{ credential: 'GH', limit: 5000, remaining: 4990, resetAt: null }];
      expect(await writeGuarded(sqlite.db, [repository.guardStep({ importId: claimed.id, run: claimed.run, fence: 5n, hold: 'share' })], [repository.progressStep(claimed.id, Date.now(), counts(3), budget)])).toBe(true);
      expect(
        await writeGuarded(
          sqlite.db,
          [repository.jobGuardStep(claimed.id, claimed.run), jobs.finishStep(claimed.id, 'r1', claimed.run, 1n, { state: 'done' }, Date.now())],
          [repository.progressStep(claimed.id, Date.now(), counts(2), null)],
        ),
      ).toBe(true);
      // A stale fence is refused, on SQLite as on PostgreSQL.
      expect(await writeGuarded(sqlite.db, [repository.guardStep({ importId: claimed.id, run: claimed.run, fence: 4n, hold: 'share' })], [])).toBeNull();
      const before = await repository.findById(claimed.id);
      expect(before?.requests.total).toBe(5);
      expect(before?.rate).toEqual(budget);
      await repository.compactProgress(claimed.id);
      const after = await repository.findById(claimed.id);
      expect(after?.requests).toEqual(before?.requests);
      expect(after?.rate).toEqual(budget);
      expect(after?.progressAt).toBe(before?.progressAt);
    } finally {
      await sqlite.close();
      await target.dispose();
    }
  });
});
