import { createHash } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { urlKey } from '../../../src/importer/attachments/url-key.js';
import type { StoredType } from '../../../src/importer/types.js';
import type { Database } from '../../../src/store/database.js';
import type { ImportState } from '../../../src/store/import-tables.js';
import { listColumns } from '../../../src/store/import-list-columns.js';

/*
 * A small imported project, GitHub-shaped: each object starts from the
 * example GitHub's OpenAPI description gives for its operation
 * (test/fake-github/openapi-examples.json) and is changed where a test
 * needs it, so every field name is GitHub's.
 */

type Json = Record<string, any>;

const EXAMPLES = JSON.parse(readFileSync(fileURLToPath(new URL('../../fake-github/openapi-examples.json', import.meta.url)), 'utf8')) as {
  operations: Record<string, { example: unknown }>;
};

/** A fresh copy of the (first) example of a GitHub operation. */
export function example(operation: string): Json {
  const found = EXAMPLES.operations[operation]?.example;
  if (found === undefined) throw new Error(`no example for ${operation}`);
  return structuredClone(Array.isArray(found) ? found[0] : found) as Json;
}

export const OWNER = 'octocat';
export const REPO = 'Hello-World';
export const API = 'https://api.github.com';
const REPO_API = `${API}/repos/${OWNER}/${REPO}`;
const HTML = `https://github.com/${OWNER}/${REPO}`;

export function user(login: string, id: number): Json {
  return {
    ...example('users/get-by-username'),
    login,
    id,
    node_id: Buffer.from(`04:User${id}`).toString('base64'),
    avatar_url: `https://avatars.githubusercontent.com/u/${id}?v=4`,
    url: `${API}/users/${login}`,
    html_url: `https://github.com/${login}`,
  } as Json;
}

/** A user as embedded in other objects (the simple-user fields only). */
function simpleUser(login: string, id: number): Json {
  const { login: _l, id: _i, node_id, avatar_url, gravatar_id, url, html_url, type, site_admin } = user(login, id);
  return { login, id, node_id, avatar_url, gravatar_id, url, html_url, type, site_admin };
}

const OCTOCAT = simpleUser('octocat', 583231);
const HUBOT = simpleUser('hubot', 1_000_002);

export const LABELS = [
  { id: 9, name: 'bug', color: 'd73a4a' },
  { id: 10, name: 'Help Wanted', color: '008672' },
  { id: 100, name: 'enhancement', color: 'a2eeef' },
].map((label) => ({
  ...example('issues/list-labels-for-repo'),
  ...label,
  node_id: `LA_${label.id}`,
  url: `${REPO_API}/labels/${encodeURIComponent(label.name)}`,
  description: `${label.name} label`,
  default: label.name === 'bug',
})) as Json[];

const label = (name: string) => LABELS.find((l) => l.name === name)!;

/** Attachment URLs as GitHub writes them in Markdown bodies. */
export const IMAGE_URL = 'https://github.com/user-attachments/assets/3b7ab8c2-1f0e-4d55-9b52-6f0c1a2d9e11';
export const PENDING_URL = 'https://github.com/user-attachments/assets/77a1c0de-0000-4000-8000-000000000001';
export const ASSET_URL = `${HTML}/releases/download/v1.0.0/hello-1.0.0.tar.gz`;
export const PAGE_URL = 'https://github.com/user-attachments/files/18000001/report.html';

export const IMAGE_BYTES = Buffer.from('89504e470d0a1a0a0000000d49484452000000010000000108060000001f15c4890000000d4944415478da63f8ffff3f0005fe02fea7d6a4c10000000049454e44ae426082', 'hex');
export const ASSET_BYTES = Buffer.from('not really a tarball, but bytes all the same\n');
export const PAGE_BYTES = Buffer.from('<html><body><script>alert(document.domain)</script></body></html>');

interface IssueSeed {
  number: number;
  id: number;
  title: string;
  state: 'open' | 'closed';
  labels: string[];
  comments: number;
  created: string;
  updated: string;
  pull?: boolean;
  body?: string;
}

/** Issues 1–5 and pull requests 6–7, ids growing with time, as GitHub's do. */
export const ISSUES: IssueSeed[] = [
  { number: 1, id: 1001, title: 'Crash on start', state: 'open', labels: ['bug'], comments: 2, created: '2024-01-01T10:00:00Z', updated: '2024-03-01T10:00:00Z', body: `It crashes:\n\n![screenshot](${IMAGE_URL})\n\nand also ![later](${PENDING_URL}); details: [report](${PAGE_URL}).` },
  { number: 2, id: 1002, title: 'Add dark mode', state: 'open', labels: ['enhancement', 'Help Wanted'], comments: 0, created: '2024-01-02T10:00:00Z', updated: '2024-01-05T10:00:00Z' },
  { number: 3, id: 1003, title: 'Typo in README', state: 'closed', labels: ['bug'], comments: 5, created: '2024-01-03T10:00:00Z', updated: '2024-01-04T10:00:00Z' },
  { number: 4, id: 1004, title: 'Slow search', state: 'open', labels: ['bug', 'Help Wanted'], comments: 1, created: '2024-01-04T10:00:00Z', updated: '2024-02-10T10:00:00Z' },
  { number: 5, id: 1005, title: 'Question about licensing', state: 'open', labels: [], comments: 0, created: '2024-01-05T10:00:00Z', updated: '2024-01-06T10:00:00Z' },
  { number: 6, id: 2006, title: 'Fix the crash on start', state: 'closed', labels: ['bug'], comments: 1, created: '2024-01-06T10:00:00Z', updated: '2024-01-20T10:00:00Z', pull: true },
  { number: 7, id: 2007, title: 'Dark mode', state: 'open', labels: ['enhancement'], comments: 0, created: '2024-01-07T10:00:00Z', updated: '2024-02-01T10:00:00Z', pull: true },
];

function issueJson(seed: IssueSeed): Json {
  const issue = example('issues/get');
  const base = `${REPO_API}/issues/${seed.number}`;
  Object.assign(issue, {
    id: seed.id,
    node_id: `I_kwDO${seed.id}`,
    url: base,
    repository_url: REPO_API,
    labels_url: `${base}/labels{/name}`,
    comments_url: `${base}/comments`,
    events_url: `${base}/events`,
    html_url: `${HTML}/${seed.pull ? 'pull' : 'issues'}/${seed.number}`,
    number: seed.number,
    state: seed.state,
    title: seed.title,
    body: seed.body ?? `Body of #${seed.number}`,
    user: seed.number % 2 ? OCTOCAT : HUBOT,
    labels: seed.labels.map(label),
    comments: seed.comments,
    created_at: seed.created,
    updated_at: seed.updated,
    closed_at: seed.state === 'closed' ? seed.updated : null,
    milestone: null,
  });
  if (seed.pull) {
    issue.pull_request = {
      url: `${REPO_API}/pulls/${seed.number}`,
      html_url: `${HTML}/pull/${seed.number}`,
      diff_url: `${HTML}/pull/${seed.number}.diff`,
      patch_url: `${HTML}/pull/${seed.number}.patch`,
      merged_at: seed.number === 6 ? '2024-01-20T10:00:00Z' : null,
    };
  } else {
    delete issue.pull_request;
  }
  return issue;
}

function pullJson(seed: IssueSeed): Json {
  const pull = example('pulls/list');
  const base = `${REPO_API}/pulls/${seed.number}`;
  Object.assign(pull, {
    id: seed.id + 50_000,
    node_id: `PR_kwDO${seed.id}`,
    url: base,
    html_url: `${HTML}/pull/${seed.number}`,
    issue_url: `${REPO_API}/issues/${seed.number}`,
    comments_url: `${REPO_API}/issues/${seed.number}/comments`,
    review_comments_url: `${base}/comments`,
    number: seed.number,
    state: seed.state,
    title: seed.title,
    body: seed.body ?? `Body of #${seed.number}`,
    user: HUBOT,
    labels: seed.labels.map(label),
    milestone: null,
    created_at: seed.created,
    updated_at: seed.updated,
    closed_at: seed.state === 'closed' ? seed.updated : null,
    merged_at: seed.number === 6 ? '2024-01-20T10:00:00Z' : null,
  });
  if (seed.number === 6) pull.merged_by = OCTOCAT;
  return pull;
}

export const NOTES = [
  { id: 5001, number: 1, created: '2024-01-01T11:00:00Z', updated: '2024-01-01T11:00:00Z', body: `Same here: ![again](${IMAGE_URL})` },
  { id: 5002, number: 1, created: '2024-01-02T11:00:00Z', updated: '2024-02-15T11:00:00Z', body: 'Still happens on 2.0.' },
  { id: 5003, number: 6, created: '2024-01-06T12:00:00Z', updated: '2024-01-06T12:00:00Z', body: 'LGTM once CI passes.' },
  { id: 5004, number: 3, created: '2024-01-03T12:00:00Z', updated: '2024-01-03T12:00:00Z', body: 'Fixed in the wiki.' },
].map((note) => ({
  ...example('issues/list-comments'),
  id: note.id,
  node_id: `IC_kwDO${note.id}`,
  url: `${REPO_API}/issues/comments/${note.id}`,
  html_url: `${HTML}/issues/${note.number}#issuecomment-${note.id}`,
  issue_url: `${REPO_API}/issues/${note.number}`,
  body: note.body,
  user: note.id % 2 ? OCTOCAT : HUBOT,
  created_at: note.created,
  updated_at: note.updated,
  number: note.number,
})) as Json[];

export const DIFF_NOTES = [
  { id: 7001, created: '2024-01-07T09:00:00Z', updated: '2024-01-09T09:00:00Z' },
  { id: 7002, created: '2024-01-08T09:00:00Z', updated: '2024-01-08T09:00:00Z' },
].map((note) => ({
  ...example('pulls/list-review-comments'),
  id: note.id,
  node_id: `PRRC_kwDO${note.id}`,
  url: `${REPO_API}/pulls/comments/${note.id}`,
  pull_request_url: `${REPO_API}/pulls/6`,
  body: `Nit ${note.id}: see ![diagram](${IMAGE_URL})`,
  user: OCTOCAT,
  created_at: note.created,
  updated_at: note.updated,
})) as Json[];

export const REVIEWS = [9002, 9001].map((id) => ({
  ...example('pulls/list-reviews'),
  id,
  node_id: `PRR_kwDO${id}`,
  user: OCTOCAT,
  body: id === 9001 ? 'Looks good' : 'Approved',
  state: id === 9001 ? 'COMMENTED' : 'APPROVED',
  pull_request_url: `${REPO_API}/pulls/6`,
  submitted_at: id === 9001 ? '2024-01-07T10:00:00Z' : '2024-01-08T10:00:00Z',
})) as Json[];

export const EVENTS = [
  { id: 8001, number: 1, event: 'labeled', created: '2024-01-01T10:05:00Z' },
  { id: 8002, number: 6, event: 'merged', created: '2024-01-20T10:00:00Z' },
  { id: 8003, number: 1, event: 'assigned', created: '2024-01-02T10:05:00Z' },
].map((event) => ({
  ...example('issues/list-events-for-repo'),
  id: event.id,
  node_id: `LE_kwDO${event.id}`,
  url: `${REPO_API}/issues/events/${event.id}`,
  actor: OCTOCAT,
  event: event.event,
  created_at: event.created,
  issue: issueJson(ISSUES.find((i) => i.number === event.number)!),
  number: event.number,
})) as Json[];

export const MILESTONES = [
  { id: 301, number: 1, state: 'open', title: 'v1.0', due_on: '2024-06-01T07:00:00Z', open: 3, closed: 1 },
  { id: 302, number: 2, state: 'open', title: 'v0.9', due_on: '2024-03-01T08:00:00Z', open: 1, closed: 3 },
  { id: 303, number: 3, state: 'open', title: 'Someday', due_on: null, open: 2, closed: 0 },
  { id: 304, number: 4, state: 'closed', title: 'v0.1', due_on: '2023-06-01T07:00:00Z', open: 0, closed: 8 },
].map((m) => ({
  ...example('issues/list-milestones'),
  id: m.id,
  node_id: `MI_kwDO${m.id}`,
  url: `${REPO_API}/milestones/${m.number}`,
  number: m.number,
  state: m.state,
  title: m.title,
  due_on: m.due_on,
  open_issues: m.open,
  closed_issues: m.closed,
  creator: OCTOCAT,
})) as Json[];

export const RELEASES = [
  { id: 401, tag: 'v0.9.0', created: '2024-03-01T10:00:00Z' },
  { id: 402, tag: 'v1.0.0', created: '2024-06-01T10:00:00Z' },
].map((r) => {
  const release = example('repos/list-releases');
  return {
    ...release,
    id: r.id,
    node_id: `RE_kwDO${r.id}`,
    tag_name: r.tag,
    name: r.tag,
    body: r.tag === 'v1.0.0' ? `Release notes with a picture: ![shot](${IMAGE_URL})` : 'First beta',
    created_at: r.created,
    published_at: r.created,
    author: OCTOCAT,
    assets:
      r.tag === 'v1.0.0'
        ? [{ ...release.assets[0], id: 501, name: 'hello-1.0.0.tar.gz', browser_download_url: ASSET_URL, content_type: 'application/gzip' }]
        : [],
  };
}) as Json[];

export const COLLABORATORS = [
  { ...user('hubot', 1_000_002), permissions: { pull: true, triage: true, push: true, maintain: false, admin: false }, role_name: 'write' },
  { ...user('octocat', 583231), permissions: { pull: true, triage: true, push: true, maintain: true, admin: true }, role_name: 'admin' },
] as Json[];

export const PROTECTED_BRANCH = 'release/1.x';
export const PROTECTION: Json = { ...example('repos/get-branch-protection'), url: `${REPO_API}/branches/release/1.x/protection` };

export function repositoryJson(description: string): Json {
  return { ...example('repos/get'), name: REPO, full_name: `${OWNER}/${REPO}`, description, owner: OCTOCAT };
}

function sha256(bytes: Buffer): string {
  return createHash('sha256').update(bytes).digest('hex');
}

export interface Seeded {
  /** The `name` of the import `/repos/octocat/Hello-World` reads. */
  mainName: string;
  mainId: number;
}

async function insertImport(database: Pick<Database, 'db'>, name: string, owner: string, repo: string, apiUrl: string, state: ImportState): Promise<number> {
  const now = Date.now();
  const row = await database.db
    .insertInto('imports')
    .values({ name, owner, repo, api_url: apiUrl, credentials: '[]', concurrency: 4, state, stage: state === 'pending' ? 'repository' : 'finish', mode: 'full', created_at: now, updated_at: now })
    .returning('id')
    .executeTakeFirstOrThrow();
  return Number(row.id);
}

type ObjectColumns = { number?: number | null; state?: string | null; created_at?: string | null; updated_at?: string | null; labels?: string | null; comments?: number | null; parent?: number | null };

async function insertObject(database: Pick<Database, 'db'>, importId: number, type: StoredType, key: string, data: Json, columns: ObjectColumns = {}): Promise<void> {
  const { number: _n, ...stored } = data;
  // Notes and events carry their number only in the column (the JSON is GitHub's).
  const json = type === 'note' || type === 'issue_event' ? stored : data;
  await database.db
    .insertInto('import_objects')
    // The list columns as the importer writes them (objects.ts), from the JSON.
    .values({ import_id: importId, type, key, run: 1, data: JSON.stringify(json), number: null, parent: null, state: null, created_at: null, updated_at: null, labels: null, comments: null, ...listColumns(type, key, json), ...columns })
    .execute();
}

/** Stored JSON of a note or event as served (without the test's `number`). */
export function served(object: Json): Json {
  const { number: _n, ...rest } = object;
  return rest;
}

function labelsColumn(names: string[]): string | null {
  return names.length ? `\n${names.map((n) => n.toLowerCase()).join('\n')}\n` : null;
}

/**
 * Stores the project: a GHE copy of octocat/Hello-World first (lowest id,
 * another name), then the github.com one named like the repo (which the API
 * must prefer), two imports of octocat/Spoon-Knife named otherwise (the
 * oldest wins), a pending import without a repository, users, attachments
 * and their files.
 */
export async function seedProject(database: Pick<Database, 'db'>, filesDir: string): Promise<Seeded> {
  const ghe = await insertImport(database, 'ghe-hello', OWNER, REPO, 'https://ghe.example.com/api/v3', 'synced');
  await insertObject(database, ghe, 'repository', 'repository', repositoryJson('the GHE copy'));
  const main = await insertImport(database, REPO, OWNER, REPO, API, 'synced');
  const spoonOld = await insertImport(database, 'spoon-first', OWNER, 'Spoon-Knife', API, 'synced');
  await insertObject(database, spoonOld, 'repository', 'repository', { ...repositoryJson('first spoon'), name: 'Spoon-Knife' });
  const spoonNew = await insertImport(database, 'spoon-second', OWNER, 'Spoon-Knife', 'https://ghe.example.com/api/v3', 'synced');
  await insertObject(database, spoonNew, 'repository', 'repository', { ...repositoryJson('second spoon'), name: 'Spoon-Knife' });
  await insertImport(database, 'not-yet', OWNER, 'Not-Yet', API, 'pending');

  await insertObject(database, main, 'repository', 'repository', repositoryJson('the github.com copy'));
  for (const seed of ISSUES) {
    const columns = { number: seed.number, state: seed.state, created_at: seed.created, updated_at: seed.updated, labels: labelsColumn(seed.labels), comments: seed.comments };
    await insertObject(database, main, seed.pull ? 'pull_request_issue' : 'issue', String(seed.id), issueJson(seed), columns);
    if (seed.pull) {
      const pull = pullJson(seed);
      await insertObject(database, main, 'pull_request', String(pull.id), pull, { number: seed.number, state: seed.state, created_at: seed.created, updated_at: seed.updated });
    }
  }
  for (const note of NOTES) await insertObject(database, main, 'note', String(note.id), note, { number: note.number, created_at: note.created_at, updated_at: note.updated_at });
  for (const note of DIFF_NOTES) await insertObject(database, main, 'diff_note', String(note.id), note, { number: 6, created_at: note.created_at, updated_at: note.updated_at });
  for (const review of REVIEWS) await insertObject(database, main, 'pull_request_review', String(review.id), review, { number: 6, created_at: review.submitted_at });
  for (const event of EVENTS) await insertObject(database, main, 'issue_event', String(event.id), event, { number: event.number, created_at: event.created_at });
  for (const l of LABELS) await insertObject(database, main, 'label', String(l.id), l, { state: l.name.toLowerCase() });
  for (const m of MILESTONES) await insertObject(database, main, 'milestone', String(m.id), m, { number: m.number, state: m.state, created_at: m.created_at, updated_at: m.updated_at });
  for (const r of RELEASES) await insertObject(database, main, 'release', String(r.id), r, { created_at: r.created_at });
  for (const c of COLLABORATORS) await insertObject(database, main, 'collaborator', String(c.id), c, { state: c.login.toLowerCase() });
  await insertObject(database, main, 'protected_branch', PROTECTED_BRANCH, PROTECTION);

  const now = Date.now();
  const GHE = 'https://ghe.example.com/api/v3';
  const users = [
    { api_host: API, login_key: 'octocat', state: 'found' as const, data: JSON.stringify(user('octocat', 583231)) },
    { api_host: API, login_key: 'deleted-user', state: 'missing' as const, data: null },
    // A host no import uses: not served.
    { api_host: 'https://github.other.example/api/v3', login_key: 'stranger', state: 'found' as const, data: JSON.stringify(user('stranger', 77)) },
    // In the GHE import (the oldest) and the github.com one: the GHE profile is served, though github.com's was fetched later.
    { api_host: GHE, login_key: 'hubot', state: 'found' as const, data: JSON.stringify(user('hubot', 1001)) },
    { api_host: API, login_key: 'hubot', state: 'found' as const, data: JSON.stringify(user('hubot', 2002)), fetched_at: now + 1000 },
    // Only in a GHE import, with a profile only on github.com: a host where it does not appear is never served.
    { api_host: API, login_key: 'ghe-only', state: 'found' as const, data: JSON.stringify(user('ghe-only', 3003)) },
  ];
  for (const u of users) await database.db.insertInto('github_users').values({ etag: null, fetched_at: now, expires_at: now + 3600_000, ...u }).execute();
  const appearing = [
    { import_id: main, login: 'octocat' },
    { import_id: main, login: 'deleted-user' },
    { import_id: ghe, login: 'hubot' },
    { import_id: main, login: 'hubot' },
    { import_id: spoonNew, login: 'ghe-only' },
  ];
  for (const u of appearing) await database.db.insertInto('import_users').values({ ...u, login_key: u.login.toLowerCase(), run: 1 }).execute();

  const files = [
    { url: IMAGE_URL, kind: 'attachment' as const, bytes: IMAGE_BYTES, content_type: 'image/png', filename: 'screen shot #1.png' },
    { url: ASSET_URL, kind: 'release_asset' as const, bytes: ASSET_BYTES, content_type: 'application/gzip', filename: 'hello-1.0.0.tar.gz' },
    { url: PAGE_URL, kind: 'attachment' as const, bytes: PAGE_BYTES, content_type: 'text/html', filename: 'report.html' },
  ];
  for (const file of files) {
    const sha = sha256(file.bytes);
    writeFileSync(join(filesDir, sha), file.bytes);
    await database.db
      .insertInto('import_attachments')
      .values({ import_id: main, url_key: urlKey(file.url), url: file.url, kind: file.kind, state: 'done', sha256: sha, size: file.bytes.length, content_type: file.content_type, filename: file.filename, error: null, run: 1, updated_at: now })
      .execute();
  }
  await database.db
    .insertInto('import_attachments')
    .values({ import_id: main, url_key: urlKey(PENDING_URL), url: PENDING_URL, kind: 'attachment', state: 'pending', sha256: null, size: null, content_type: null, filename: null, error: null, run: 1, updated_at: now })
    .execute();
  return { mainName: REPO, mainId: main };
}
