import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateProject, type LogEntry } from '../fake-github/index.js';
import { credentialNames, expectedCounts, importedCounts, startImportHarness, type ImportHarness } from './harness.js';

/*
 * What a later step of an import reads is durable before the cursor that
 * says the step before it is done (issue 25, finding 1): a run stopped right
 * there — a shutdown here, a SIGKILL in crash-every-commit.test.ts — resumes
 * to the whole project. Each case stops a run at the request that follows
 * such a commit, then runs the import again.
 */

/** Runs import `name` until the fake sees a request `stopAt` matches, there stopping it as a shutdown does. */
async function runStoppedAt(h: ImportHarness, name: string, stopAt: (entry: LogEntry) => boolean): Promise<string> {
  const stop = new AbortController();
  h.fake.onRequest = (entry) => {
    if (!stopAt(entry)) return;
    h.fake.onRequest = undefined;
    stop.abort(new Error('shutting down'));
  };
  try {
    return (await h.app.importer.runHere(name, stop.signal)).outcome;
  } finally {
    h.fake.onRequest = undefined;
  }
}

describe.each(['sqlite', 'postgres'] as const)('an import stopped right after a list whose names a later step reads, on %s', (database) => {
  let h: ImportHarness;
  afterAll(async () => h?.close());

  it('fetches every protected branch\'s rules when stopped right after the branch list was stored', async () => {
    h = await startImportHarness({ database });
    const record = await h.app.importer.create({ project: h.project, apiUrl: h.fake.apiUrl, credentials: credentialNames(1), concurrency: 1 });
    // The branch list's page (and its cursor, done) is stored before the first branch's rules are asked for.
    expect(await runStoppedAt(h, record.name, (entry) => entry.path.endsWith('/protection'))).toBe('stopped');
    expect((await h.app.importer.get(record.name)).stage).toBe('protected_branches');
    const { outcome } = await h.app.importer.runHere(record.name);
    expect(outcome).toBe('synced');
    const status = await h.app.importer.status(record.name);
    expect(status.counts.imported.protected_branch).toBe(h.fake.expected().protected_branch);
    expect(importedCounts(status)).toEqual(expectedCounts(h.fake));
  }, 60_000);

  it('on a sync, drops the rules of a branch no longer protected, and keeps the rest when the list is unchanged (304)', async () => {
    const name = h.fake.project.repo.name;
    const release = h.fake.project.branches.find((branch) => branch.name === 'release/1.x')!;
    const rules = release.protection;
    release.protection = null;
    h.fake.project.touch('protection');
    await h.app.importer.requestSync(name);
    expect((await h.app.importer.runHere(name)).outcome).toBe('synced');
    const keys = async () =>
      (await h.app.kernel.database.db.selectFrom('import_objects').select('key').where('type', '=', 'protected_branch').orderBy('key').execute()).map((row) => row.key);
    expect(await keys()).toEqual(['main']);
    // Unchanged: the list answers 304, and the branch it named last time keeps its rules.
    h.fake.clearLog();
    await h.app.importer.requestSync(name);
    expect((await h.app.importer.runHere(name)).outcome).toBe('synced');
    expect(h.fake.requests.filter((entry) => entry.path.endsWith('/branches')).map((entry) => entry.status)).toEqual([304]);
    expect(await keys()).toEqual(['main']);
    release.protection = rules;
    h.fake.project.touch('protection');
    await h.app.importer.requestSync(name);
    expect((await h.app.importer.runHere(name)).outcome).toBe('synced');
    expect(await keys()).toEqual(['main', 'release/1.x']);
  }, 60_000);
});

describe.each(['sqlite', 'postgres'] as const)('an import stopped during the walks of events per issue (past the page cap), on %s', (database) => {
  let h: ImportHarness;
  beforeAll(async () => {
    // More than 100 events: with a cap of 100 items the repo-wide list stops after page 1, and older events are walked per issue.
    const project = generateProject({ issues: 50, pulls: 15, users: 8, reviewsPerPull: 1, reviewCommentsPerPull: 1, seed: 11 });
    h = await startImportHarness({ database, fake: { project, pageCapItems: 100 } });
  });
  afterAll(async () => h?.close());

  it('walks every issue created before the oldest event the list gave, though the first walks stored older events', async () => {
    expect(h.fake.expected().issue_event).toBeGreaterThan(100);
    const record = await h.app.importer.create({ project: h.project, apiUrl: h.fake.apiUrl, credentials: credentialNames(1), concurrency: 1 });
    let perIssue = 0;
    // Stopped as the second issue's events are asked for: the first issue's walk (its older events) is stored.
    expect(await runStoppedAt(h, record.name, (entry) => /\/issues\/\d+\/events$/.test(entry.path) && ++perIssue === 2)).toBe('stopped');
    expect(perIssue).toBe(2);
    const { outcome } = await h.app.importer.runHere(record.name);
    expect(outcome).toBe('synced');
    const status = await h.app.importer.status(record.name);
    expect(status.counts.imported.issue_event).toBe(h.fake.expected().issue_event);
    expect(importedCounts(status)).toEqual(expectedCounts(h.fake));
  }, 60_000);
});
