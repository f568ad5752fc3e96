// Seeds forgesync's store for bench/github-api.mjs straight from the fake GitHub's
// lists (no importer run: it would spend minutes on per-object calls the read API
// does not need): every page of each list the read workload reads, written with
// the importer's own upsert (dist/importer/store/objects.js, which fills the
// list columns) in one batch per page, under an import row as a finished import
// has it. And a synthetic import of many issues (copies of the fake's, renumbered)
// for the deep-page measurement.

import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const { openDatabase } = await import(join(ROOT, 'dist/store/database.js'));
const { upsertObjectSteps } = await import(join(ROOT, 'dist/importer/store/objects.js'));
const { runBatch, guardedList } = await import(join(ROOT, 'dist/store/batch.js'));
const { labelNames, numberFromUrl } = await import(join(ROOT, 'dist/importer/run/batch.js'));

/** The lists walked, and the stored row of each item (as the importer's collections write them). */
const LISTS = [
  { path: '/issues?state=all&sort=created&direction=asc', row: (i) => ({ type: i.pull_request ? 'pull_request_issue' : 'issue', key: String(i.id), number: i.number, state: i.state, createdAt: i.created_at, updatedAt: i.updated_at, labels: labelNames(i.labels), comments: i.comments, data: i }) },
  { path: '/pulls?state=all&sort=created&direction=asc', row: (p) => ({ type: 'pull_request', key: String(p.id), number: p.number, state: p.state, createdAt: p.created_at, updatedAt: p.updated_at, data: p }) },
  { path: '/issues/comments?sort=created&direction=asc', row: (c) => ({ type: 'note', key: String(c.id), number: numberFromUrl(c.issue_url), createdAt: c.created_at, updatedAt: c.updated_at, data: c }) },
  { path: '/pulls/comments?sort=created&direction=asc', row: (c) => ({ type: 'diff_note', key: String(c.id), number: numberFromUrl(c.pull_request_url), createdAt: c.created_at, updatedAt: c.updated_at, data: c }) },
  { path: '/labels?', row: (l) => ({ type: 'label', key: String(l.id), state: String(l.name).toLowerCase(), data: l }) },
  { path: '/milestones?state=all', row: (m) => ({ type: 'milestone', key: String(m.id), number: m.number, state: m.state, createdAt: m.created_at, updatedAt: m.updated_at, data: m }) },
  { path: '/releases?', row: (r) => ({ type: 'release', key: String(r.id), createdAt: r.created_at, data: r }) },
  { path: '/collaborators?affiliation=direct', row: (u) => ({ type: 'collaborator', key: String(u.id), state: String(u.login).toLowerCase(), data: u }) },
];

async function getJson(url, token) {
  const response = await fetch(url, { headers: { authorization: `token ${token}`, 'user-agent': 'forgesync-bench' } });
  if (response.status !== 200) throw new Error(`GET ${url}: ${response.status} ${await response.text()}`);
  return response.json();
}

async function write(database, importId, rows) {
  await runBatch(database.db, guardedList({ guards: [], steps: upsertObjectSteps(database.db, importId, 1, rows) }));
}

async function insertImport(database, { name, owner, repo, apiUrl }) {
  const now = Date.now();
  const row = await database.db
    .insertInto('imports')
    .values({ name, owner, repo, api_url: apiUrl, credentials: '[]', concurrency: 4, state: 'synced', stage: 'finish', mode: 'full', created_at: now, updated_at: now })
    .returning('id')
    .executeTakeFirstOrThrow();
  return Number(row.id);
}

/**
 * Inputs: the store's URL, the fake ({ apiUrl, owner, repo }), its token, and
 * `onProgress(text)`. Stores the import `owner/repo`; returns what the
 * workload picks from ({ issueNumbers, pullNumbers, logins, counts, issueTemplates, repository }).
 */
export async function seedFromFake(databaseUrl, fake, token, onProgress) {
  const database = await openDatabase(databaseUrl);
  try {
    const repoUrl = `${fake.apiUrl}/repos/${fake.owner}/${fake.repo}`;
    const importId = await insertImport(database, { name: fake.repo, owner: fake.owner, repo: fake.repo, apiUrl: fake.apiUrl });
    const repository = await getJson(repoUrl, token);
    await write(database, importId, [{ type: 'repository', key: 'repository', number: repository.id, createdAt: repository.created_at, updatedAt: repository.updated_at, data: repository }]);
    const seen = { issueNumbers: [], pullNumbers: [], logins: new Set(), counts: {}, issueTemplates: [] };
    for (const list of LISTS) {
      let count = 0;
      for (let page = 1; ; page++) {
        const items = await getJson(`${repoUrl}${list.path}&per_page=100&page=${page}`, token);
        const rows = items.map(list.row);
        if (rows.length > 0) await write(database, importId, rows);
        for (const row of rows) {
          if (row.type === 'issue') seen.issueNumbers.push(row.number);
          if (row.type === 'pull_request') seen.pullNumbers.push(row.number);
          if (row.type === 'issue' && seen.issueTemplates.length < 2000) seen.issueTemplates.push(row.data);
          if (row.data?.user?.login) seen.logins.add(row.data.user.login);
        }
        count += rows.length;
        onProgress(`seeding ${list.path.split('?')[0]}: ${count}`);
        if (items.length < 100) break;
      }
      seen.counts[list.path.split('?')[0]] = count;
    }
    return { ...seen, repository, logins: [...seen.logins].sort() };
  } finally {
    await database.close();
  }
}

/**
 * Stores an import `owner/name` of `issues` issues, copies of `templates`
 * renumbered 1…issues, created a minute apart (ids growing with them), in
 * batches of 1,000: what a page deep in a long list is measured on.
 */
export async function seedSynthetic(databaseUrl, { owner, name, apiUrl, issues, templates, repository }, onProgress) {
  const database = await openDatabase(databaseUrl);
  try {
    const importId = await insertImport(database, { name, owner, repo: name, apiUrl });
    await write(database, importId, [{ type: 'repository', key: 'repository', number: repository.id + 1, data: { ...repository, id: repository.id + 1, name, full_name: `${owner}/${name}` } }]);
    const start = Date.UTC(2015, 0, 1);
    for (let first = 0; first < issues; first += 1000) {
      const rows = [];
      for (let i = first; i < Math.min(first + 1000, issues); i++) {
        const template = templates[i % templates.length];
        const at = new Date(start + i * 60_000).toISOString().replace(/\.\d{3}Z$/, 'Z');
        const data = { ...template, id: 9_000_000_000 + i, number: i + 1, created_at: at, updated_at: at };
        rows.push({ type: 'issue', key: String(data.id), number: data.number, state: data.state, createdAt: at, updatedAt: at, labels: labelNames(data.labels), comments: data.comments, data });
      }
      await write(database, importId, rows);
      onProgress(`seeding ${owner}/${name}: ${Math.min(first + 1000, issues)}`);
    }
  } finally {
    await database.close();
  }
}
