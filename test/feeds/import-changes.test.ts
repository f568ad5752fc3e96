import { mkdirSync, mkdtempSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { credentialNames, startImportHarness, type ImportHarness } from '../importer/harness.js';
import { eventually } from '../support/harness.js';
import { fileSinkEvents } from './file-events.js';

/** The change log rows of imported objects, in order. */
async function importChanges(h: ImportHarness, afterSeq = 0) {
  const rows = await h.app.kernel.database.db.selectFrom('change_log').selectAll().where('module', '=', 'importer').where('seq', '>', afterSeq).orderBy('seq').execute();
  return rows.map((row) => ({ seq: Number(row.seq), type: row.type, key: row.change_key, data: JSON.parse(row.data!) as { action: string; number: number | null } }));
}

async function head(h: ImportHarness): Promise<number> {
  const row = await h.app.kernel.database.db.selectFrom('change_head').select('seq').executeTakeFirstOrThrow();
  return Number(row.seq);
}

/** A new directory inside the feed file root (file sinks write nowhere else). */
function sinkDirectory(h: ImportHarness): string {
  mkdirSync(h.app.config.feedFileRoot, { recursive: true });
  return mkdtempSync(join(h.app.config.feedFileRoot, 'files-'));
}


describe('changes recorded by the GitHub importer', () => {
  let h: ImportHarness;
  let name: string;

  beforeAll(async () => {
    h = await startImportHarness();
    const record = await h.app.importer.create({ project: h.project, apiUrl: h.fake.apiUrl, credentials: credentialNames(1) });
    name = record.name;
    expect((await h.app.importer.runHere(name)).outcome).toBe('synced');
  });
  afterAll(async () => h?.close());

  it('records one created change per imported object, in the same commits as the objects', async () => {
    const changes = await importChanges(h);
    const issues = changes.filter((change) => change.type === 'dev.forgesync.import.issue');
    const stored = await h.app.kernel.database.db.selectFrom('import_objects').select('key').where('type', '=', 'issue').execute();
    expect(issues.map((change) => change.key).sort()).toEqual(stored.map((row) => `${name} issue ${row.key}`).sort());
    expect(issues.every((change) => change.data.action === 'created' && typeof change.data.number === 'number')).toBe(true);
    // The importer's own rows are not changes anyone else sees.
    expect(changes.some((change) => change.type.endsWith('.repository') || change.type.endsWith('.pull_request_issue'))).toBe(false);
  });

  it('records nothing for a sync that finds nothing new, and an update for an object that changed', async () => {
    const before = await head(h);
    await h.app.importer.requestSync(name);
    expect((await h.app.importer.runHere(name)).outcome).toBe('synced');
    expect((await importChanges(h, before)).filter((change) => change.type === 'dev.forgesync.import.issue')).toEqual([]);
    const project = h.fake.project;
    const closed = project.issues.find((candidate) => !candidate.pull && candidate.state === 'open')!;
    project.closeIssue(closed.number, 'carol');
    const added = project.addIssue({ title: 'A new one', body: 'found while syncing', user: 'alice' });
    const mark = await head(h);
    await h.app.importer.requestSync(name);
    expect((await h.app.importer.runHere(name)).outcome).toBe('synced');
    const issues = (await importChanges(h, mark)).filter((change) => change.type === 'dev.forgesync.import.issue');
    expect(issues.map((change) => [change.data.number, change.data.action]).sort()).toEqual(
      [
        [closed.number, 'updated'],
        [added.number, 'created'],
      ].sort(),
    );
  });

  it('delivers them with the import, id, number, action and the object as stored', async () => {
    const dir = sinkDirectory(h);
    await h.app.feeds.add({ name: 'issues', sink: `file://${dir}`, types: ['dev.forgesync.import.issue'] });
    const status = await h.app.feeds.resync('issues', { wait: true });
    expect(status.fullSync.requested).toBe(false);
    const project = h.fake.project;
    const edited = project.issues.find((candidate) => !candidate.pull && candidate.state === 'open')!;
    project.closeIssue(edited.number, 'dave');
    await h.app.importer.requestSync(name);
    await h.app.importer.runHere(name);
    const after = await h.app.feeds.sync('issues', { wait: true });
    expect(after.lag.changes).toBe(0);
    const events = fileSinkEvents(dir);
    const full = events.filter((event) => event.type === 'dev.forgesync.import.issue');
    const issueCount = project.issues.filter((issue) => !issue.pull).length;
    expect(new Set(full.map((event) => (event.data as { id: string }).id)).size).toBe(issueCount);
    const last = events.at(-1)!;
    expect(last).toMatchObject({ type: 'dev.forgesync.import.issue', subject: `issue/${edited.number}` });
    expect(last.source).toMatch(new RegExp(`/importer/${name}$`));
    expect(last.data).toMatchObject({ import: name, number: edited.number, action: 'updated', object: { number: edited.number, state: 'closed' } });
    // The full sync gave each issue the id of the change that made its state.
    const createdIds = new Set((await importChanges(h)).map((change) => `${change.seq}`));
    expect(full.filter((event) => createdIds.has(event.id.split(':').at(-1)!)).length).toBeGreaterThan(0);
  });
});

describe('a serving process with an import and a feed', () => {
  let h: ImportHarness;
  afterAll(async () => h?.close());

  it('delivers the import\'s changes on the importer\'s nudge, not the poll', async () => {
    // The poll ten minutes away: only the writer's nudge can deliver within the test.
    h = await startImportHarness({ env: { FORGESYNC_FEED_POLL_INTERVAL: '10m' } });
    await h.app.startService();
    const dir = sinkDirectory(h);
    await h.app.feeds.add({ name: 'nudged', sink: `file://${dir}`, types: ['dev.forgesync.import.label'] });
    await new Promise((resolve) => setTimeout(resolve, 300));
    // The serving process runs the import.
    const record = await h.app.importer.create({ project: h.project, apiUrl: h.fake.apiUrl, credentials: credentialNames(1) });
    await eventually('the import to finish', async () => (await h.app.importer.status(record.name)).state === 'synced');
    const labels = h.fake.project.labels.length;
    const deadline = Date.now() + 10_000;
    while (Date.now() < deadline && fileSinkEvents(dir).filter((event) => event.type === 'dev.forgesync.import.label').length < labels) await new Promise((resolve) => setTimeout(resolve, 50));
    expect(fileSinkEvents(dir).filter((event) => event.type === 'dev.forgesync.import.label')).toHaveLength(labels);
  });
});
