import { readFileSync, writeFileSync } from 'node:fs';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { MAX_UNFINISHED_RUNS } from '../../src/importer/run/coordinator.js';
import type { ImportRecord } from '../../src/importer/store/imports.js';
import { ImportProgress } from '../../src/importer/store/progress.js';
import { credentialNames, startImportHarness, type ImportHarness } from './harness.js';
import { importStore } from '../support/stores.js';

/*
 * An import whose runs begin and never end — the process dies in each (out
 * of memory on a hostile answer, issue 24 finding 3) — is parked after
 * MAX_UNFINISHED_RUNS such runs instead of being started again at every
 * restart. A run that dies once (a SIGKILL) resumes by itself, and runs
 * stopped on purpose (a shutdown) do not count.
 *
 * A run that dies is what a coordinator's claim without an end is: the
 * claim is made here as a dying process makes it (its lease gone with it).
 */

let h: ImportHarness;
let record: ImportRecord;

beforeAll(async () => {
  h = await startImportHarness({ env: { FORGESYNC_IMPORT_SYNC_INTERVAL: '1s' } });
});
afterAll(async () => h?.close());

let imported = 0;
beforeEach(async () => {
  // A fresh import of the same project per test, under its own name.
  record = await h.app.importer.create({ project: h.project, name: `loop-${++imported}`, apiUrl: h.fake.apiUrl, credentials: credentialNames(1) });
  h.fake.clearLog();
});

/** What a process that begins a run and dies does to the import: it claims it, and never ends the run. */
async function runThatDies(): Promise<void> {
  expect(await importStore(h.app).claim(record.id, 1n)).not.toBeNull();
}

/** A run that commits a batch (a page, a job's answer: its progress row, as every batch writes one) and then dies. */
async function runThatDiesAfterCommitting(): Promise<void> {
  await runThatDies();
  const counts = { total: 1, counted: 1, notModified: 0, retried: 0, rateLimitWaits: 0, rateLimitWaitMs: 0, secondaryLimited: 0 };
  await h.app.kernel.database.db.executeQuery(new ImportProgress(h.app.kernel.database.db).step(record.id, Date.now() + 1, counts, null));
}

describe('an import whose runs never finish', () => {
  it(`is parked after ${MAX_UNFINISHED_RUNS} runs that did not finish: failed, with the reason and how to go on, off the schedule`, async () => {
    for (let run = 0; run < MAX_UNFINISHED_RUNS; run++) await runThatDies();
    const { outcome, record: parked } = await h.app.importer.runHere(record.name);
    expect(outcome).toBe('failed');
    expect(parked.state).toBe('failed');
    expect(parked.failure).toMatch(new RegExp(`^stopped after ${MAX_UNFINISHED_RUNS} runs that did not finish: .*out of memory.*forgesync import resume ${record.name}$`));
    expect(parked.nextSyncAt).toBeNull();
    // Not started a fourth time: nothing was asked of GitHub.
    expect(h.fake.requests.filter((entry) => entry.host === 'api')).toEqual([]);
    expect(h.logs.lines.find((line) => line.event === 'import_parked' && line.import === record.name)).toMatchObject({ unfinished_runs: MAX_UNFINISHED_RUNS });
    // The scheduler leaves it alone.
    await h.app.importer.tick();
    expect((await h.app.importer.get(record.name)).state).toBe('failed');
    // `import resume` goes on where it stopped, with the count started afresh.
    expect((await h.app.importer.resume(record.name)).unfinishedRuns).toBe(0);
    const resumed = await h.app.importer.runHere(record.name);
    expect(resumed.outcome).toBe('synced');
    expect(resumed.record.unfinishedRuns).toBe(0);
  }, 60_000);

  it(`resumes by itself after runs that died, fewer than ${MAX_UNFINISHED_RUNS + 1} (a SIGKILL, then another)`, async () => {
    for (let run = 0; run < MAX_UNFINISHED_RUNS - 1; run++) await runThatDies();
    const { outcome, record: after } = await h.app.importer.runHere(record.name);
    expect(outcome).toBe('synced');
    expect(after.unfinishedRuns).toBe(0);
  }, 60_000);

  it('runs that died after committing something are no crash loop: killed again and again while it goes on (distributed mode), it is never parked', async () => {
    for (let run = 0; run < MAX_UNFINISHED_RUNS + 2; run++) await runThatDiesAfterCommitting();
    expect((await h.app.importer.get(record.name)).unfinishedRuns).toBe(1);
    const { outcome, record: after } = await h.app.importer.runHere(record.name);
    expect(outcome).toBe('synced');
    expect(after.unfinishedRuns).toBe(0);
  }, 60_000);

  it('an operator\'s resume of a started import starts the count afresh (killed again and again while someone resumes it)', async () => {
    for (let run = 0; run < MAX_UNFINISHED_RUNS; run++) await runThatDies();
    expect((await h.app.importer.resume(record.name)).unfinishedRuns).toBe(0);
    expect((await h.app.importer.runHere(record.name)).outcome).toBe('synced');
  }, 60_000);

  it('runs stopped by a shutdown do not count: stopped again and again, it is never parked', async () => {
    h.fake.latencyMs = 50;
    try {
      for (let stops = 0; stops < MAX_UNFINISHED_RUNS + 2; stops++) {
        const stop = new AbortController();
        const before = h.fake.requests.length;
        const run = h.app.importer.runHere(record.name, stop.signal);
        await expect.poll(() => h.fake.requests.length).toBeGreaterThan(before);
        stop.abort(new Error('shutting down'));
        expect((await run).outcome).toBe('stopped');
        expect((await h.app.importer.get(record.name)).unfinishedRuns).toBe(0);
      }
    } finally {
      h.fake.latencyMs = 0;
    }
    expect((await h.app.importer.runHere(record.name)).outcome).toBe('synced');
  }, 60_000);

  it('a run that cannot start (its credential gone) fails at once with the reason, instead of being tried again as one that never ended', async () => {
    const file = h.env.FORGESYNC_SECRETS_FILE!;
    const secrets = readFileSync(file, 'utf8');
    writeFileSync(file, '{}', { mode: 0o600 });
    try {
      const { outcome, record: failed } = await h.app.importer.runHere(record.name);
      expect(outcome).toBe('failed');
      expect(failed.failure).toMatch(/credential "GH"/);
      expect(failed.unfinishedRuns).toBe(0);
    } finally {
      writeFileSync(file, secrets, { mode: 0o600 });
    }
  });
});
