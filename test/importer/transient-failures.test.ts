import { spawn } from 'node:child_process';
import pg from 'pg';
import { afterEach, describe, expect, it } from 'vitest';
import { generateProject } from '../fake-github/index.js';
import { eventually } from '../support/harness.js';
import { credentialNames, expectedCounts, importedCounts, startImportHarness, type ImportHarness } from './harness.js';

/*
 * Issue 25: transient failures never end an import. A database that
 * refuses for a while — a serialisation failure, a lock or statement
 * timeout, every connection ended (a restart), SQLite's write lock held by
 * another process past its busy timeout — makes the step write again with
 * backoff, and the import ends synced with exact counts, nothing fetched
 * twice. A run that fails for such a cause all the same is `failed` with a
 * retry time, and the scheduler resumes it on its own; one that fails for a
 * permanent cause (the repository answers 404) stays failed.
 */

/** A project that takes a few seconds to import (so faults land mid-import). */
const project = () => generateProject({ issues: 60, pulls: 12, commentsPerIssue: 4, reviewCommentsPerPull: 3, reviewsPerPull: 2, users: 15, seed: 25 });

let h: ImportHarness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

/** Runs `statements` on the harness's PostgreSQL database, from a connection of the test's own. */
async function onDatabase(harness: ImportHarness, statements: string): Promise<void> {
  const client = new pg.Client({ connectionString: harness.databaseUrl });
  await client.connect();
  try {
    await client.query(statements);
  } finally {
    await client.end();
  }
}

/**
 * A trigger that refuses writes of imported objects as a busy PostgreSQL
 * does, with the codes it uses (a serialisation failure, a lock timeout, a
 * deadlock, a statement timeout): every third transaction that writes them
 * (counted by a sequence, which a rollback does not undo, so a batch written
 * again is a transaction of its own), and every one while
 * forgesync_fault_on has a row.
 */
const FAULT_TRIGGER = `
  create table forgesync_fault_on (on_ boolean);
  create sequence forgesync_fault_seq;
  create function forgesync_fault() returns trigger language plpgsql as $$
  declare
    codes text[] := array['40001', '55P03', '40P01', '57014'];
    n bigint;
  begin
    if exists (select 1 from forgesync_fault_on) then
      raise exception 'injected transient failure' using errcode = '40001';
    end if;
    -- Decided once per transaction, by its first statement on the table.
    if coalesce(current_setting('forgesync.fault_decided', true), '') = '' then
      n := nextval('forgesync_fault_seq');
      perform set_config('forgesync.fault_decided', 'yes', true);
      if n % 3 = 0 then
        raise exception 'injected transient failure %', n using errcode = codes[1 + ((n / 3) % 4)::int];
      end if;
    end if;
    return null;
  end $$;
  create trigger forgesync_fault before insert or update on import_objects for each statement execute function forgesync_fault();
`;

describe('a database that refuses writes for a while', () => {
  it('PostgreSQL: serialisation failures, lock and statement timeouts on every third transaction are written again; the import ends synced, exact, nothing fetched twice', async () => {
    h = await startImportHarness({ database: 'postgres', fake: { project: project() } });
    await onDatabase(h, FAULT_TRIGGER);
    const record = await h.app.importer.create({ project: h.project, apiUrl: h.fake.apiUrl, credentials: credentialNames(1) });
    const { outcome } = await h.app.importer.runHere(record.name);
    const status = await h.app.importer.status(record.name);
    expect(status.failure).toBeNull();
    expect(outcome).toBe('synced');
    expect(importedCounts(status)).toEqual(expectedCounts(h.fake));
    // Written again, not fetched again: the requests stay within the clean import's budget.
    expect(status.requests.counted).toBeLessThanOrEqual(Math.ceil(h.fake.budget({ perPage: 100 }) * 1.05));
    const retries = h.logs.lines.filter((line) => line.event === 'import_step_retry');
    expect(retries.length).toBeGreaterThanOrEqual(5);
    // The coordinator's page commits and the per-object jobs' writes both met them.
    expect(new Set(retries.map((line) => line.step))).toEqual(new Set(['commit', 'job']));
    expect(retries.map((line) => String(line.err))).toContainEqual(expect.stringMatching(/injected transient failure/));
  }, 120_000);

  it('PostgreSQL: every connection of forgesync ended again and again mid-import (a restart) — the import still ends synced, exact', async () => {
    h = await startImportHarness({ database: 'postgres', fake: { project: project(), latencyMs: 10 } });
    await h.app.startService();
    const database = new URL(h.databaseUrl).pathname.slice(1);
    const record = await h.app.importer.create({ project: h.project, apiUrl: h.fake.apiUrl, credentials: credentialNames(1) });
    await eventually('the import to be under way', () => h!.fake.requests.length > 20);
    const admin = new pg.Client({ connectionString: h.databaseUrl });
    await admin.connect();
    let ended = 0;
    try {
      for (let round = 0; round < 8; round++) {
        const { rowCount } = await admin.query('select pg_terminate_backend(pid) from pg_stat_activity where datname = $1 and pid <> pg_backend_pid()', [database]);
        ended += rowCount ?? 0;
        await new Promise((resolve) => setTimeout(resolve, 200));
      }
    } finally {
      await admin.end();
    }
    expect(ended).toBeGreaterThan(0);
    const status = await eventually(
      'the import to be synced',
      async () => {
        const current = await h!.app.importer.status(record.name);
        return current.state === 'synced' ? current : undefined;
      },
      120_000,
      200,
    );
    expect(status.failure).toBeNull();
    expect(importedCounts(status)).toEqual(expectedCounts(h.fake));
  }, 180_000);

  it("SQLite: another process holds the file's write lock past the busy timeout — the writes wait, try again, and the import ends synced, exact", async () => {
    // A long lease: a write waiting out SQLite's busy timeout holds the event loop, lease renewals included.
    h = await startImportHarness({ fake: { project: project(), latencyMs: 10 }, env: { FORGESYNC_LEASE_TTL: '60s' } });
    const file = h.databaseUrl.replace(/^sqlite:/, '');
    const record = await h.app.importer.create({ project: h.project, apiUrl: h.fake.apiUrl, credentials: credentialNames(1) });
    // Another process opens the file first and takes the write lock when told, so the lock lands mid-import
    // however fast the import runs; it lets go once a write has waited out the busy timeout (5 s) and said so.
    const holder = spawn(
      process.execPath,
      [
        '-e',
        "const db = new (require('better-sqlite3'))(process.argv[1]); console.log('ready'); let locked = false; process.stdin.on('data', () => { if (!locked) { locked = true; db.exec('BEGIN IMMEDIATE'); console.log('locked'); } else { db.exec('COMMIT'); db.close(); process.exit(0); } });",
        file,
      ],
      { cwd: process.cwd(), stdio: ['pipe', 'pipe', 'inherit'] },
    );
    const exited = new Promise((resolve) => holder.on('exit', resolve));
    const printed = (word: string) => new Promise<void>((resolve) => holder.stdout.on('data', (chunk: Buffer) => chunk.toString().includes(word) && resolve()));
    const ready = printed('ready');
    const locked = printed('locked');
    await ready;
    let finished = false;
    const run = h.app.importer.runHere(record.name).finally(() => (finished = true));
    await eventually('the import to be under way', () => h!.fake.requests.length > 20);
    holder.stdin.write('lock\n');
    await locked;
    expect(finished, 'the import ended before the lock was taken').toBe(false);
    const lockedRetries = () => h!.logs.lines.filter((line) => line.event === 'import_step_retry' && /database is locked/.test(String(line.err)));
    await eventually('a write to wait out the busy timeout and try again', () => lockedRetries().length > 0, 60_000, 100);
    holder.stdin.write('unlock\n');
    const { outcome } = await run;
    await exited;
    const status = await h.app.importer.status(record.name);
    expect(status.failure).toBeNull();
    expect(outcome).toBe('synced');
    expect(importedCounts(status)).toEqual(expectedCounts(h.fake));
  }, 120_000);
});

describe('a run that fails all the same', () => {
  it('for a transient cause: failed with a retry time, and resumed by the scheduler on its own where it stopped; for a permanent one (the repository answers 404): it stays failed', async () => {
    h = await startImportHarness({ database: 'postgres', env: { FORGESYNC_IMPORT_RETRIES: '1' } });
    await onDatabase(h, `${FAULT_TRIGGER}; insert into forgesync_fault_on values (true);`);
    const record = await h.app.importer.create({ project: h.project, apiUrl: h.fake.apiUrl, credentials: credentialNames(1) });
    const failed = await h.app.importer.runHere(record.name);
    expect(failed.outcome).toBe('failed');
    expect(failed.record).toMatchObject({ state: 'failed', stage: 'repository', run: 1, transientFailures: 1 });
    expect(failed.record.failure).toMatch(new RegExp(`injected transient failure .*a transient failure: the import resumes by itself at .*, or now with forgesync import resume ${record.name}`));
    expect(failed.record.retryAt).toBeGreaterThan(0);
    expect((await h.app.importer.status(record.name)).retryAt).toBe(new Date(failed.record.retryAt!).toISOString());
    expect(h.logs.lines.find((line) => line.event === 'import_failed' && line.import === record.name)).toMatchObject({ transient: true });

    // The permanent one, beside it.
    const missing = await h.app.importer.create({ project: 'nobody/missing', apiUrl: h.fake.apiUrl, credentials: credentialNames(1) });
    const notFound = await h.app.importer.runHere(missing.name);
    expect(notFound.outcome).toBe('failed');
    expect(notFound.record.failure).toMatch(/nobody\/missing was not found/);
    expect(notFound.record).toMatchObject({ retryAt: null, transientFailures: 0 });

    // The database takes writes again; nobody resumes anything: the scheduler does.
    await onDatabase(h, 'drop trigger forgesync_fault on import_objects');
    await h.app.startService();
    const synced = await eventually(
      'the import to be resumed and synced',
      async () => {
        const current = await h!.app.importer.get(record.name);
        return current.state === 'synced' ? current : undefined;
      },
      60_000,
      100,
    );
    // Resumed, not started over: the same run, its transient failures counted no more.
    expect(synced).toMatchObject({ run: 1, mode: 'full', retryAt: null, transientFailures: 0, failure: null });
    expect(importedCounts(await h.app.importer.status(record.name))).toEqual(expectedCounts(h.fake));
    expect(h.logs.lines.find((line) => line.event === 'import_retry' && line.import === record.name)).toMatchObject({ stage: 'repository', transient_failures: 1 });

    // Several scheduler passes later, the 404 is still failed and was asked for no more.
    const asked = h.fake.requests.filter((entry) => entry.path.includes('/nobody/missing')).length;
    await new Promise((resolve) => setTimeout(resolve, 2500));
    expect(await h.app.importer.get(missing.name)).toMatchObject({ state: 'failed', run: 1, retryAt: null });
    expect(h.fake.requests.filter((entry) => entry.path.includes('/nobody/missing')).length).toBe(asked);
    expect(h.logs.lines.some((line) => line.event === 'import_retry' && line.import === missing.name)).toBe(false);
  }, 120_000);
});
