import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { importFilesDir } from '../../src/importer/module.js';
import { buildServer } from '../../src/server/app.js';
import { testSecret } from '../support/secrets.js';
import { generateProject } from '../fake-github/index.js';
import { credentialNames, expectedCounts, importedCounts, startImportHarness, type ImportHarness } from './harness.js';

const READ = testSecret('IMPORT_READ_TOKEN');
const ADMIN = testSecret('IMPORT_ADMIN_TOKEN');

/** The stored JSON of every object of `type`, by key. */
async function stored(h: ImportHarness, type: string): Promise<Map<string, any>> {
  const rows = await h.app.kernel.database.db.selectFrom('import_objects').select(['key', 'data']).where('type', '=', type).execute();
  return new Map(rows.map((row) => [row.key, JSON.parse(row.data)]));
}

async function importHere(h: ImportHarness, extra: { concurrency?: number; credentials?: number } = {}) {
  const record = await h.app.importer.create({
    project: h.project,
    apiUrl: h.fake.apiUrl,
    credentials: credentialNames(extra.credentials ?? 1),
    ...(extra.concurrency ? { concurrency: extra.concurrency } : {}),
  });
  const { outcome } = await h.app.importer.runHere(record.name);
  return { outcome, status: await h.app.importer.status(record.name) };
}

describe.each(['sqlite', 'postgres'] as const)('a full GitHub import on %s', (database) => {
  let h: ImportHarness;
  let result: Awaited<ReturnType<typeof importHere>>;

  beforeAll(async () => {
    h = await startImportHarness({ database });
    result = await importHere(h);
  });
  afterAll(async () => h?.close());

  it('ends synced with every object counted as imported, in the budget', () => {
    expect(result.status.failure).toBeNull();
    expect(result.outcome).toBe('synced');
    expect(result.status.state).toBe('synced');
    expect(importedCounts(result.status)).toEqual(expectedCounts(h.fake));
    // The one failure: the deleted account's profile (404), listed, not dropped.
    expect(result.status.failures).toEqual([{ type: 'user', id: 'ghost', error: expect.stringMatching(/404/) }]);
    expect(result.status.counts.fetched.user).toBe(result.status.counts.imported.user + 1);
    expect(result.status.requests.counted).toBeLessThanOrEqual(Math.ceil(h.fake.budget({ perPage: 100 }) * 1.05));
    expect(result.status.sources.repository?.state).toBe('synced');
    expect(result.status.sources.wiki?.state).toBe('synced');
  });

  it('stores each object as GitHub gave it, keyed by its id', async () => {
    const project = h.fake.project;
    const issues = await stored(h, 'issue');
    expect([...issues.values()].map((issue) => issue.number).sort((a, b) => a - b)).toEqual(
      project.issues.filter((issue) => !issue.pull).map((issue) => issue.number),
    );
    const notes = await stored(h, 'note');
    expect([...notes.keys()].sort()).toEqual(project.comments.map((comment) => String(comment.id)).sort());
    for (const comment of project.comments) expect(notes.get(String(comment.id)).body).toBe(comment.body.replaceAll('{{web}}', h.fake.webUrl).replaceAll('{{foreign}}', h.fake.foreignUrl));
    const diffNotes = await stored(h, 'diff_note');
    expect(diffNotes.size).toBe(project.reviewComments.length);
    // Threads survive: every reply points at a comment that was imported too.
    const replies = [...diffNotes.values()].filter((note) => note.in_reply_to_id);
    expect(replies.length).toBeGreaterThan(0);
    for (const reply of replies) expect(diffNotes.has(String(reply.in_reply_to_id))).toBe(true);
    const pulls = await stored(h, 'pull_request');
    const merged = [...pulls.values()].filter((pull) => pull.merged_at);
    expect(merged.length).toBe(h.fake.expected().pull_request_merged_by);
    for (const pull of merged) expect(pull.merged_by?.login).toMatch(/\w/);
    const requests = await stored(h, 'pull_request_review_request');
    expect(requests.size).toBe(h.fake.expected().pull_request_review_request);
  });

  it('downloads each distinct attachment once, with its bytes', async () => {
    const attachments = await stored(h, 'attachment');
    const expected = h.fake.expected();
    expect(attachments.size).toBe(expected.attachment);
    const downloads = h.fake.requests.filter((entry) => entry.pathKind === 'attachment' && entry.status === 200);
    const paths = downloads.map((entry) => entry.path);
    expect(new Set(paths).size).toBe(paths.length);
    for (const attachment of attachments.values()) {
      const bytes = readFileSync(join(importFilesDir(h.app.config.dataDir), attachment.sha256));
      expect(createHash('sha256').update(bytes).digest('hex')).toBe(attachment.sha256);
      expect(bytes.length).toBe(attachment.size);
    }
    // The link to another host is left alone: never requested, and reported.
    expect(h.fake.requests.some((entry) => entry.host === 'foreign')).toBe(false);
    const refused = await h.app.kernel.database.db.selectFrom('import_attachments').select('url').where('state', '=', 'refused').execute();
    expect(refused.map((row) => row.url).every((url) => url.startsWith(h.fake.foreignUrl))).toBe(true);
    expect(refused.length).toBeGreaterThan(0);
  });

  it('downloads every release asset, a draft\'s too, through the API asset endpoint: the token goes there, never to the storage it redirects to', async () => {
    const assets = await stored(h, 'release_asset');
    expect(assets.size).toBe(h.fake.expected().release_asset);
    const drafts = [...(await stored(h, 'release')).values()].filter((release) => release.draft);
    expect(drafts.length).toBeGreaterThan(0);
    const rows = await h.app.kernel.database.db.selectFrom('import_attachments').selectAll().where('kind', '=', 'release_asset').execute();
    expect(rows.map((row) => row.url).sort()).toEqual([...assets.values()].map((asset) => asset.browser_download_url).sort());
    for (const asset of assets.values()) {
      const row = rows.find((candidate) => candidate.url === asset.browser_download_url)!;
      // Stored as GitHub gave it; the bytes are the asset's.
      expect([asset.name, row.state, row.error]).toEqual([asset.name, 'done', null]);
      expect(row.fetch_url).toBe(`${h.fake.apiUrl}/repos/${h.project}/releases/assets/${asset.id}`);
      expect(`sha256:${row.sha256}`).toBe(asset.digest);
      expect(readFileSync(join(importFilesDir(h.app.config.dataDir), row.sha256!)).length).toBe(asset.size);
      const endpoint = h.fake.requests.filter((entry) => entry.host === 'api' && entry.path === new URL(row.fetch_url!).pathname);
      expect(endpoint.map((entry) => [entry.status, entry.authorization, entry.tokenIndex])).toEqual([[302, true, 0]]);
      const storage = h.fake.requests.filter((entry) => entry.path.startsWith(`/_storage/releases/${asset.id}/`));
      expect(storage.map((entry) => [entry.host, entry.status, entry.authorization])).toEqual([['web', 200, false]]);
    }
    // browser_download_url is never asked for (a draft's answers 404).
    expect(h.fake.requests.filter((entry) => entry.path.includes('/releases/download/'))).toEqual([]);
    expect(drafts.flatMap((release) => release.assets.map((asset: { browser_download_url: string }) => asset.browser_download_url)).every((url: string) => url.includes('/releases/download/untagged-'))).toBe(true);
    // The read API points a draft's download at the stored copy, which serves its bytes.
    const server = await buildServer(h.app, { tokens: { admin: ADMIN, read: READ } });
    try {
      const get = (url: string) => server.inject({ url, headers: { authorization: `token ${READ}` } });
      const listed = (await get(`/github/repos/${h.project}/releases`)).json();
      const draftAsset = listed.find((release: { draft: boolean }) => release.draft).assets[0];
      const copy = new URL(draftAsset.browser_download_url);
      expect(copy.pathname).toMatch(new RegExp(`^/github/attachments/${h.fake.project.repo.name}/[0-9a-f]{64}/${draftAsset.name}$`));
      const served = await get(copy.pathname);
      expect(served.statusCode).toBe(200);
      expect(`sha256:${createHash('sha256').update(served.rawPayload).digest('hex')}`).toBe(draftAsset.digest);
    } finally {
      await server.close();
    }
  });

  it('keeps the token out of the database and the logs', async () => {
    const db = h.app.kernel.database.db;
    for (const table of ['imports', 'import_objects', 'import_cursors', 'import_jobs', 'import_failures', 'import_users', 'github_users', 'import_attachments', 'sources', 'registry'] as const) {
      const rows = await db.selectFrom(table).selectAll().execute();
      expect([table, JSON.stringify(rows).includes(h.token)]).toEqual([table, false]);
    }
    expect(h.logs.text.includes(h.token)).toBe(false);
    expect(h.logs.text.length).toBeGreaterThan(0);
  });

  it('logs the final line in the seed\'s shape', () => {
    const line = h.logs.lines.find((entry) => entry.message === 'GitHub project import finished') as any;
    expect(line).toMatchObject({ import: h.fake.project.repo.name, objects_imported: { fetched: expect.any(Object), imported: expect.any(Object) } });
    expect(typeof line.duration_s).toBe('number');
    expect(line.objects_imported.imported.issue).toBe(h.fake.expected().issue);
  });

  it('syncs only what changed, and an unchanged project costs almost nothing', async () => {
    const name = h.fake.project.repo.name;
    h.fake.clearLog();
    await h.app.importer.requestSync(name);
    let run = await h.app.importer.runHere(name);
    expect(run.outcome).toBe('synced');
    // The first sync asks what changed since the import began (the lists sorted by update: four requests);
    // after that an unchanged project answers 304 everywhere, which costs no budget.
    // (Releases may answer anew too: downloading their assets raised their download counts.)
    expect(h.fake.stats().counted).toBeLessThanOrEqual(5);
    h.fake.clearLog();
    await h.app.importer.requestSync(name);
    run = await h.app.importer.runHere(name);
    expect(run.outcome).toBe('synced');
    expect(h.fake.stats().counted).toBe(0);
    expect(h.fake.stats().notModified).toBeGreaterThan(5);

    const project = h.fake.project;
    const issue = project.addIssue({ title: 'A new one', body: 'found while syncing', user: 'alice', labels: [project.labels[0]!.name] });
    project.comment(issue.number, 'first!', 'bob');
    project.closeIssue(project.issues.find((candidate) => !candidate.pull && candidate.state === 'open')!.number, 'carol');
    const open = project.pulls.find((pull) => pull.state === 'open')!;
    await h.fake.mergePull(open.number, 'dave');
    h.fake.clearLog();
    await h.app.importer.requestSync(name);
    run = await h.app.importer.runHere(name);
    expect(run.outcome).toBe('synced');
    const status = await h.app.importer.status(name);
    expect(importedCounts(status)).toEqual(expectedCounts(h.fake));
    const pulls = await stored(h, 'pull_request');
    expect([...pulls.values()].find((pull) => pull.number === open.number)?.merged_by?.login).toBe('dave');
    // The merged pull request's single object was asked for again (`merged` is not in the list); besides it only the one the
    // sync lists again at its watermark, conditionally (anew here: its embedded repository's open issues and push time moved).
    expect([...pulls.values()].find((pull) => pull.number === open.number)?.merged).toBe(true);
    const objects = h.fake.requests.filter((entry) => /\/pulls\/\d+$/.test(entry.path)).map((entry) => Number(/(\d+)$/.exec(entry.path)![1]));
    expect(objects).toContain(open.number);
    expect(objects.length).toBeLessThanOrEqual(2);
    // A handful of lists and the changed pull request's reviews, not the whole project again.
    expect(h.fake.stats().counted).toBeLessThan(h.fake.budget() / 2);
  });
});

describe('a repository with issues turned off', () => {
  let h: ImportHarness;
  afterAll(async () => h?.close());

  it('takes 410 Gone for an empty list, not a failure', async () => {
    h = await startImportHarness();
    h.fake.inject({ match: (request) => request.path.endsWith('/issues/events'), times: Infinity, fault: { status: 410, body: { message: 'Issues are disabled for this repo', documentation_url: 'https://docs.github.com/rest', status: '410' } } });
    const { outcome, status } = await importHere(h);
    expect(outcome).toBe('synced');
    expect(status.counts.imported.issue_event).toBe(0);
    expect(status.counts.imported.issue).toBe(h.fake.expected().issue);
  });
});

describe('a host that refuses one collaborator affiliation', () => {
  let h: ImportHarness;
  afterAll(async () => h?.close());

  it('imports every collaborator and the direct marks, and lists the refused `outside` as a failure', async () => {
    h = await startImportHarness();
    h.fake.inject({ match: /\/collaborators\?affiliation=outside/, times: Infinity, fault: { status: 422, body: { message: 'Validation Failed', documentation_url: 'https://docs.github.com/rest', status: '422' } } });
    const { outcome, status } = await importHere(h);
    expect(outcome).toBe('synced');
    expect(status.counts.imported.collaborator).toBe(h.fake.expected().collaborator);
    expect((await stored(h, 'collaborator_direct')).size).toBe(h.fake.expected().collaboratorDirect);
    expect((await stored(h, 'collaborator_outside')).size).toBe(0);
    expect(status.failures.filter((failure) => failure.type === 'collaborator').map((failure) => failure.id)).toEqual(['collaborators?affiliation=outside']);
  });
});

describe('a release asset endpoint that redirects off GitHub\'s storage', () => {
  let h: ImportHarness;
  afterAll(async () => h?.close());

  it('leaves the asset as a link, listed without the signed URL\'s query, and sends nothing there', async () => {
    h = await startImportHarness({ fake: { hostile: { redirect: { match: '/releases/assets/', to: 'https://storage.example.net/asset?X-Amz-Signature=s3cr3t' } } } });
    const { outcome, status } = await importHere(h);
    expect(outcome).toBe('synced');
    const assets = status.failures.filter((failure) => failure.type === 'release_asset');
    expect(assets).toHaveLength(h.fake.expected().release_asset);
    for (const failure of assets) expect(failure.error).toBe('redirected off the project\'s hosts (https://storage.example.net/asset): left as a link');
    expect(JSON.stringify(status).includes('s3cr3t')).toBe(false);
  });
});

describe('an import under pressure', () => {
  let h: ImportHarness;
  afterAll(async () => h?.close());

  it('walks past the page cap, retries 502s and secondary limits, and paces two tokens under their limits', async () => {
    const project = generateProject({ issues: 60, pulls: 12, commentsPerIssue: 6, reviewCommentsPerPull: 4, reviewsPerPull: 2, users: 20, seed: 7 });
    h = await startImportHarness({
      tokens: 2,
      fake: { project, pageCapItems: 300, limit: 60, windowMs: 1500, maxConcurrent: 6, secondaryRetryAfterS: 1, rateLimitEndpoint: false },
    });
    h.fake.inject({ match: '/issues/comments', times: 2, fault: '502' });
    h.fake.inject({ match: '/pulls?', times: 1, fault: 'secondary' });
    h.fake.inject({ match: '/users/', times: 2, fault: 'reset' });
    h.fake.inject({ match: '/labels', times: 1, fault: 'rate-limit-429' });
    const { outcome, status } = await importHere(h, { credentials: 2, concurrency: 8 });
    expect(status.failure).toBeNull();
    expect(outcome).toBe('synced');
    expect(importedCounts(status)).toEqual(expectedCounts(h.fake));
    expect(status.requests.retried).toBeGreaterThanOrEqual(5);
    // The page cap was met on the comments and walked past with since windows; events fell back to per-issue lists.
    const capped = h.fake.requests.filter((entry) => entry.status === 422);
    expect(capped.some((entry) => entry.path.endsWith('/issues/comments'))).toBe(true);
    expect(h.fake.requests.some((entry) => entry.path.endsWith('/issues/comments') && entry.query.includes('since=') && entry.status === 200)).toBe(true);
    expect(capped.length).toBeLessThanOrEqual(3 * 8);
    // Both tokens were used, and the budgets (60 per 1.5 s each) made the import wait for resets rather than run into them.
    const tokens = new Set(h.fake.requests.filter((entry) => entry.host === 'api').map((entry) => entry.tokenIndex));
    expect([...tokens].sort()).toEqual([0, 1]);
    expect(status.requests.rateLimitWaits).toBeGreaterThan(0);
    const exhausted = h.fake.requests.filter((entry) => entry.status === 403 && entry.fault === undefined);
    expect(exhausted.length).toBeLessThanOrEqual(6);
  }, 120_000);
});
