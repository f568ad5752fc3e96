import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { NotFoundError } from '../../src/errors.js';
import { urlKey } from '../../src/importer/attachments/url-key.js';
import {
  exportImport,
  ExportTargetNotDirectoryError,
  ExportTargetNotEmptyError,
  ImportNotFoundError,
  InvalidExportOptionError,
  type ExportOptions,
  type ExportSummary,
} from '../../src/importer/export/index.js';
import { openDatabase, type Database } from '../../src/store/database.js';
import { createTestDatabase, type TestDatabase } from '../support/harness.js';

const run = promisify(execFile);

type Json = Record<string, any>;

const API = 'https://api.github.com';
const WEB = 'https://github.com';
const REPO_URL = `${WEB}/acme/widgets`;

// --- GitHub-shaped fixtures (REST field names as GitHub returns them) ---------------------------

function user(login: string, id: number, type = 'User'): Json {
  return {
    login,
    id,
    node_id: `MDQ6VXNlcj${id}`,
    avatar_url: `https://avatars.githubusercontent.com/u/${id}?v=4`,
    gravatar_id: '',
    url: `${API}/users/${login}`,
    html_url: `${WEB}/${login}`,
    type,
    site_admin: false,
  };
}

const octocat = user('octocat', 583231);
const hubot = user('hubot', 480938);
const monalisa = user('monalisa', 2);
const acme = user('acme', 9919, 'Organization');

function profile(base: Json, extra: Json): Json {
  return { ...base, name: null, company: null, blog: '', location: null, email: null, bio: null, public_repos: 8, followers: 20, following: 0, created_at: '2011-01-25T18:44:36Z', updated_at: '2024-05-01T10:00:00Z', ...extra };
}

const justiceLeague = {
  id: 1,
  node_id: 'MDQ6VGVhbTE=',
  url: `${API}/teams/1`,
  html_url: `${WEB}/orgs/acme/teams/justice-league`,
  name: 'Justice League',
  slug: 'justice-league',
  description: 'A great team.',
  privacy: 'closed',
  permission: 'push',
  parent: null,
};

const labelBug = { id: 208045946, node_id: 'MDU6TGFiZWwyMDgwNDU5NDY=', url: `${API}/repos/acme/widgets/labels/bug`, name: 'bug', description: "Something isn't working", color: 'd73a4a', default: true };
const labelHelp = { id: 208045947, node_id: 'MDU6TGFiZWwyMDgwNDU5NDc=', url: `${API}/repos/acme/widgets/labels/help%20wanted`, name: 'help wanted', description: 'Extra attention is needed', color: '008672', default: true };

function milestone(number: number, id: number, title: string, state: string): Json {
  return {
    url: `${API}/repos/acme/widgets/milestones/${number}`,
    html_url: `${WEB}/acme/widgets/milestone/${number}`,
    id,
    number,
    state,
    title,
    description: `Tracking ${title}`,
    creator: octocat,
    open_issues: 1,
    closed_issues: 1,
    created_at: '2024-01-10T12:00:00Z',
    updated_at: '2024-02-10T12:00:00Z',
    closed_at: state === 'closed' ? '2024-02-10T12:00:00Z' : null,
    due_on: '2024-03-01T08:00:00Z',
  };
}

const milestone1 = milestone(1, 1002604, 'v1.0', 'closed');
const milestone2 = milestone(2, 1002605, 'v2.0', 'open');

/** An attachment URL as GitHub writes it in a body (new style), another for the same bytes (old style), one not downloaded. */
const ATTACHMENT_URL = 'https://github.com/user-attachments/assets/0f1c2d3e-4b5a-6978-8a9b-0c1d2e3f4a5b';
const LEGACY_ATTACHMENT_URL = 'https://user-images.githubusercontent.com/583231/283921-9a1b2c3d-4e5f-6a7b-8c9d-0e1f2a3b4c5d.png';
const PENDING_URL = 'https://github.com/user-attachments/files/17000001/crash.log';
const ASSET_URL = 'https://github.com/acme/widgets/releases/download/v1.0.0/widgets-1.0.0.tar.gz';

const PNG = Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]), Buffer.from('a screenshot, honestly')]);
const TARBALL = Buffer.from('widgets-1.0.0 release tarball bytes');
const sha256 = (bytes: Buffer) => createHash('sha256').update(bytes).digest('hex');

/** Temporary directories made by this file, removed after it. */
const made: string[] = [];
async function tempDir(prefix: string): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), prefix));
  made.push(dir);
  return dir;
}
afterAll(async () => {
  await Promise.all(made.map((dir) => rm(dir, { recursive: true, force: true })));
});
const PNG_SHA = sha256(PNG);
const TARBALL_SHA = sha256(TARBALL);

function issue(number: number, id: number, extra: Json): Json {
  return {
    url: `${API}/repos/acme/widgets/issues/${number}`,
    repository_url: `${API}/repos/acme/widgets`,
    html_url: `${WEB}/acme/widgets/issues/${number}`,
    id,
    node_id: `I_kwDOA${id}`,
    number,
    title: `Issue ${number}`,
    user: octocat,
    labels: [],
    state: 'open',
    locked: false,
    assignee: null,
    assignees: [],
    milestone: null,
    comments: 1,
    created_at: '2024-01-11T09:00:00Z',
    updated_at: '2024-01-12T09:00:00Z',
    closed_at: null,
    author_association: 'MEMBER',
    body: '',
    ...extra,
  };
}

const issue1 = issue(1, 2001, {
  labels: [labelBug],
  milestone: milestone1,
  assignee: monalisa,
  assignees: [monalisa],
  body: `It crashes on start.\n\n![screenshot](${ATTACHMENT_URL})\n\nLog: [crash.log](${PENDING_URL})`,
});
const issue2 = issue(2, 2002, {
  labels: [labelHelp],
  state: 'closed',
  closed_at: '2024-01-20T09:00:00Z',
  body: `Old screenshot: <img src="${LEGACY_ATTACHMENT_URL}" width="300">\nNot an attachment: ${ATTACHMENT_URL}/raw`,
});

function pull(number: number, id: number, extra: Json): Json {
  return {
    url: `${API}/repos/acme/widgets/pulls/${number}`,
    id,
    node_id: `PR_kwDOA${id}`,
    html_url: `${WEB}/acme/widgets/pull/${number}`,
    number,
    state: 'open',
    locked: false,
    title: `Pull ${number}`,
    user: hubot,
    body: 'Fixes #1',
    created_at: '2024-01-13T09:00:00Z',
    updated_at: '2024-01-14T09:00:00Z',
    closed_at: null,
    merged_at: null,
    merge_commit_sha: 'e5bd3914e2e596debea16f433f57875b5b90bcd6',
    assignee: null,
    assignees: [],
    requested_reviewers: [],
    requested_teams: [],
    labels: [],
    milestone: null,
    draft: false,
    head: { label: 'hubot:fix-crash', ref: 'fix-crash', sha: '6dcb09b5b57875f334f61aebed695e2e4193db5e', user: hubot, repo: { id: 99, name: 'widgets', full_name: 'hubot/widgets', owner: hubot } },
    base: { label: 'acme:main', ref: 'main', sha: '9c48853fa3dc5c1c3d6f1f1cd1f2743e72652840', user: acme, repo: { id: 42, name: 'widgets', full_name: 'acme/widgets', owner: acme } },
    author_association: 'CONTRIBUTOR',
    merged_by: null,
    ...extra,
  };
}

const pull3 = pull(3, 3003, { state: 'closed', closed_at: '2024-01-15T09:00:00Z', merged_at: '2024-01-15T09:00:00Z', merged_by: octocat, milestone: milestone2, labels: [labelBug] });
const pull4 = pull(4, 3004, { draft: true, title: 'WIP: rewrite', requested_reviewers: [monalisa], requested_teams: [justiceLeague] });

function comment(id: number, number: number, isPull: boolean, author: Json, body: string): Json {
  return {
    url: `${API}/repos/acme/widgets/issues/comments/${id}`,
    html_url: `${WEB}/acme/widgets/${isPull ? 'pull' : 'issues'}/${number}#issuecomment-${id}`,
    issue_url: `${API}/repos/acme/widgets/issues/${number}`,
    id,
    node_id: `IC_kwDOA${id}`,
    user: author,
    created_at: '2024-01-16T09:00:00Z',
    updated_at: '2024-01-16T09:00:00Z',
    author_association: 'MEMBER',
    body,
  };
}

function review(id: number, number: number, state: string, body: string): Json {
  return {
    id,
    node_id: `PRR_kwDOA${id}`,
    user: monalisa,
    body,
    state,
    html_url: `${WEB}/acme/widgets/pull/${number}#pullrequestreview-${id}`,
    pull_request_url: `${API}/repos/acme/widgets/pulls/${number}`,
    submitted_at: '2024-01-14T10:00:00Z',
    commit_id: 'ecdd80bb57125d7ba9641ffaa4d7d2c19d3f3091',
    author_association: 'MEMBER',
  };
}

function diffNote(id: number, number: number, reviewId: number, inReplyTo: number | undefined, body: string): Json {
  return {
    url: `${API}/repos/acme/widgets/pulls/comments/${id}`,
    pull_request_review_id: reviewId,
    id,
    node_id: `PRRC_kwDOA${id}`,
    diff_hunk: '@@ -16,33 +16,40 @@ public class Connection : IConnection...',
    path: 'src/start.ts',
    position: 1,
    original_position: 4,
    commit_id: '6dcb09b5b57875f334f61aebed695e2e4193db5e',
    original_commit_id: '9c48853fa3dc5c1c3d6f1f1cd1f2743e72652840',
    ...(inReplyTo === undefined ? {} : { in_reply_to_id: inReplyTo }),
    user: inReplyTo === undefined ? monalisa : hubot,
    body,
    created_at: '2024-01-14T10:00:00Z',
    updated_at: '2024-01-14T10:00:00Z',
    html_url: `${WEB}/acme/widgets/pull/${number}#discussion_r${id}`,
    pull_request_url: `${API}/repos/acme/widgets/pulls/${number}`,
    author_association: 'MEMBER',
    start_line: null,
    original_start_line: null,
    start_side: null,
    line: 2,
    original_line: 2,
    side: 'RIGHT',
    subject_type: 'line',
  };
}

function event(id: number, name: string, number: number, isPull: boolean, extra: Json): Json {
  return {
    id,
    node_id: `IE_lADOA${id}`,
    url: `${API}/repos/acme/widgets/issues/events/${id}`,
    actor: octocat,
    event: name,
    commit_id: null,
    commit_url: null,
    created_at: '2024-01-20T09:00:00Z',
    issue: { ...issue(number, 2000 + number, {}), ...(isPull ? { pull_request: { url: `${API}/repos/acme/widgets/pulls/${number}` } } : {}) },
    ...extra,
  };
}

const releaseAsset = {
  url: `${API}/repos/acme/widgets/releases/assets/7`,
  browser_download_url: ASSET_URL,
  id: 7,
  node_id: 'RA_kwDOA7',
  name: 'widgets-1.0.0.tar.gz',
  label: '',
  state: 'uploaded',
  content_type: 'application/gzip',
  size: TARBALL.length,
  download_count: 42,
  created_at: '2024-02-01T09:05:00Z',
  updated_at: '2024-02-01T09:05:00Z',
  uploader: octocat,
};

function release(id: number, tag: string, assets: Json[]): Json {
  return {
    url: `${API}/repos/acme/widgets/releases/${id}`,
    html_url: `${WEB}/acme/widgets/releases/tag/${tag}`,
    id,
    node_id: `RE_kwDOA${id}`,
    tag_name: tag,
    target_commitish: 'main',
    name: `Widgets ${tag}`,
    body: `Release ${tag}`,
    draft: false,
    prerelease: false,
    created_at: '2024-02-01T09:00:00Z',
    published_at: '2024-02-01T09:10:00Z',
    author: octocat,
    assets,
  };
}

const protection = {
  url: `${API}/repos/acme/widgets/branches/main/protection`,
  required_status_checks: { url: `${API}/repos/acme/widgets/branches/main/protection/required_status_checks`, strict: true, contexts: ['ci/build'], checks: [{ context: 'ci/build', app_id: null }] },
  enforce_admins: { url: `${API}/repos/acme/widgets/branches/main/protection/enforce_admins`, enabled: true },
  required_pull_request_reviews: { dismiss_stale_reviews: true, require_code_owner_reviews: false, required_approving_review_count: 2, require_last_push_approval: false },
  restrictions: { url: `${API}/repos/acme/widgets/branches/main/protection/restrictions`, users: [octocat], teams: [justiceLeague], apps: [] },
  required_linear_history: { enabled: true },
  allow_force_pushes: { enabled: false },
  allow_deletions: { enabled: false },
  block_creations: { enabled: false },
  required_conversation_resolution: { enabled: true },
  lock_branch: { enabled: false },
  allow_fork_syncing: { enabled: false },
};

const repositoryData = {
  id: 42,
  node_id: 'R_kgDOA42',
  name: 'widgets',
  full_name: 'acme/widgets',
  private: true,
  owner: acme,
  html_url: REPO_URL,
  description: 'Widgets, all kinds',
  fork: false,
  url: `${API}/repos/acme/widgets`,
  homepage: 'https://widgets.example.com',
  default_branch: 'main',
  has_issues: true,
  has_projects: true,
  has_wiki: true,
  has_downloads: true,
  has_discussions: false,
  archived: false,
  topics: ['widgets', 'typescript'],
  allow_merge_commit: true,
  allow_squash_merge: true,
  allow_rebase_merge: false,
  delete_branch_on_merge: true,
  created_at: '2020-03-04T05:06:07Z',
  updated_at: '2024-05-01T10:00:00Z',
  pushed_at: '2024-05-01T10:00:00Z',
  organization: acme,
};

// --- Seeding ------------------------------------------------------------------------------------

interface Row {
  type: string;
  key: string;
  data: Json;
  number?: number;
  parent?: number;
  state?: string;
  created_at?: string;
  labels?: string;
}

async function insertImport(db: Database, name: string, owner: string, repo: string): Promise<number> {
  const now = Date.now();
  const row = await db.db
    .insertInto('imports')
    .values({ name, owner, repo, api_url: API, credentials: '["github"]', concurrency: 4, state: 'synced', stage: 'finish', mode: 'full', created_at: now, updated_at: now })
    .returning('id')
    .executeTakeFirstOrThrow();
  return Number(row.id);
}

async function insertObjects(db: Database, importId: number, rows: Row[]): Promise<void> {
  await db.db
    .insertInto('import_objects')
    .values(
      rows.map((row) => ({
        import_id: importId,
        type: row.type,
        key: row.key,
        number: row.number ?? null,
        parent: row.parent ?? null,
        state: row.state ?? null,
        created_at: row.created_at ?? (typeof row.data.created_at === 'string' ? row.data.created_at : null),
        updated_at: typeof row.data.updated_at === 'string' ? row.data.updated_at : null,
        labels: row.labels ?? null,
        comments: null,
        run: 1,
        data: JSON.stringify(row.data),
      })),
    )
    .execute();
}

/** The import everything is exported from: a couple of each type, with an attachment, its file and the users. */
async function seed(db: Database, filesDir: string): Promise<void> {
  const id = await insertImport(db, 'acme-widgets', 'acme', 'widgets');
  const attachment = { url: ATTACHMENT_URL, sha256: PNG_SHA, size: PNG.length, content_type: 'image/png', filename: 'screenshot.png' };
  await insertObjects(db, id, [
    { type: 'repository', key: 'repository', data: repositoryData },
    { type: 'label', key: String(labelBug.id), state: 'bug', data: labelBug },
    { type: 'label', key: String(labelHelp.id), state: 'help wanted', data: labelHelp },
    { type: 'milestone', key: String(milestone1.id), number: 1, state: 'closed', data: milestone1 },
    { type: 'milestone', key: String(milestone2.id), number: 2, state: 'open', data: milestone2 },
    { type: 'issue', key: String(issue1.id), number: 1, state: 'open', labels: '\nbug\n', data: issue1 },
    { type: 'issue', key: String(issue2.id), number: 2, state: 'closed', labels: '\nhelp wanted\n', data: issue2 },
    // The pull requests' entries in /issues: internal, never exported as issues.
    { type: 'pull_request_issue', key: '2003', number: 3, state: 'closed', data: issue(3, 2003, { pull_request: { url: pull3.url } }) },
    { type: 'pull_request_issue', key: '2004', number: 4, state: 'open', data: issue(4, 2004, { pull_request: { url: pull4.url } }) },
    { type: 'pull_request', key: String(pull3.id), number: 3, state: 'closed', data: pull3 },
    { type: 'pull_request', key: String(pull4.id), number: 4, state: 'open', data: pull4 },
    { type: 'pull_request_merged_by', key: '3', number: 3, data: octocat },
    { type: 'pull_request_review_request', key: '4/user/monalisa', number: 4, data: monalisa },
    { type: 'pull_request_review_request', key: '4/team/justice-league', number: 4, data: justiceLeague },
    { type: 'note', key: '1001', number: 1, data: comment(1001, 1, false, hubot, `Same here: ![again](${ATTACHMENT_URL}).`) },
    { type: 'note', key: '1002', number: 2, data: comment(1002, 2, false, monalisa, 'Closing as fixed.') },
    { type: 'note', key: '1003', number: 3, data: comment(1003, 3, true, octocat, 'LGTM, merging.') },
    { type: 'pull_request_review', key: '80', number: 3, created_at: '2024-01-14T10:00:00Z', data: review(80, 3, 'APPROVED', 'Ship it') },
    { type: 'pull_request_review', key: '81', number: 4, created_at: '2024-01-14T10:00:00Z', data: review(81, 4, 'CHANGES_REQUESTED', 'Needs tests') },
    { type: 'diff_note', key: '10', number: 3, data: diffNote(10, 3, 80, undefined, 'Why not `start()`?') },
    { type: 'diff_note', key: '11', number: 3, data: diffNote(11, 3, 80, 10, 'Because it races.') },
    { type: 'issue_event', key: '5001', number: 2, data: event(5001, 'closed', 2, false, { commit_id: '6dcb09b5b57875f334f61aebed695e2e4193db5e', commit_url: `${API}/repos/acme/widgets/commits/6dcb09b5b57875f334f61aebed695e2e4193db5e` }) },
    { type: 'issue_event', key: '5002', number: 3, data: event(5002, 'merged', 3, true, {}) },
    { type: 'issue_event', key: '5003', number: 1, data: event(5003, 'labeled', 1, false, { label: { name: 'bug', color: 'd73a4a' } }) },
    { type: 'release', key: '5', data: release(5, 'v1.0.0', [releaseAsset]) },
    { type: 'release', key: '6', data: release(6, 'v1.1.0', []) },
    { type: 'release_asset', key: '7', parent: 5, data: releaseAsset },
    { type: 'attachment', key: urlKey(ATTACHMENT_URL), data: attachment },
    { type: 'collaborator', key: String(octocat.id), state: 'octocat', data: { ...octocat, permissions: { admin: true, maintain: true, push: true, triage: true, pull: true }, role_name: 'admin' } },
    { type: 'collaborator', key: String(hubot.id), state: 'hubot', data: { ...hubot, permissions: { admin: false, maintain: false, push: true, triage: true, pull: true }, role_name: 'write' } },
    { type: 'protected_branch', key: 'main', data: protection },
  ]);

  const now = Date.now();
  await db.db
    .insertInto('import_attachments')
    .values([
      { import_id: id, url_key: urlKey(ATTACHMENT_URL), url: ATTACHMENT_URL, kind: 'attachment', state: 'done', sha256: PNG_SHA, size: PNG.length, content_type: 'image/png', filename: 'screenshot.png', error: null, run: 1, updated_at: now },
      { import_id: id, url_key: urlKey(LEGACY_ATTACHMENT_URL), url: LEGACY_ATTACHMENT_URL, kind: 'attachment', state: 'done', sha256: PNG_SHA, size: PNG.length, content_type: 'image/png', filename: 'old screenshot.png', error: null, run: 1, updated_at: now },
      { import_id: id, url_key: urlKey(PENDING_URL), url: PENDING_URL, kind: 'attachment', state: 'pending', sha256: null, size: null, content_type: null, filename: null, error: null, run: 1, updated_at: now },
      { import_id: id, url_key: urlKey(ASSET_URL), url: ASSET_URL, kind: 'release_asset', state: 'done', sha256: TARBALL_SHA, size: TARBALL.length, content_type: 'application/gzip', filename: 'widgets-1.0.0.tar.gz', error: null, run: 1, updated_at: now },
    ])
    .execute();
  await writeFile(join(filesDir, PNG_SHA), PNG);
  await writeFile(join(filesDir, TARBALL_SHA), TARBALL);

  await db.db
    .insertInto('import_users')
    .values(['octocat', 'hubot', 'monalisa', 'ghost-user'].map((login) => ({ import_id: id, login_key: login.toLowerCase(), login, run: 1 })))
    .execute();
  const profiles: [string, Json | null, 'found' | 'missing', string][] = [
    ['octocat', profile(octocat, { name: 'The Octocat', company: '@github', blog: 'https://github.blog', location: 'San Francisco', email: 'octocat@github.com' }), 'found', API],
    ['hubot', profile(hubot, { name: 'Hubot' }), 'found', API],
    ['monalisa', profile(monalisa, { name: 'Mona Lisa Octocat' }), 'found', API],
    ['ghost-user', null, 'missing', API],
    // Not in this import, or cached for another host: never exported.
    ['stranger', profile(user('stranger', 77), {}), 'found', API],
    ['octocat', profile(octocat, { name: 'Enterprise Octocat' }), 'found', 'https://ghe.example.com/api/v3'],
  ];
  await db.db
    .insertInto('github_users')
    .values(profiles.map(([login, data, state, host]) => ({ api_host: host, login_key: login, state, data: data && JSON.stringify(data), etag: null, fetched_at: now, expires_at: now + 86_400_000 })))
    .execute();

  // Another import in the same database: none of it may leak into the export.
  const other = await insertImport(db, 'other', 'acme', 'gadgets');
  await insertObjects(db, other, [
    { type: 'repository', key: 'repository', data: { ...repositoryData, id: 43, name: 'gadgets', full_name: 'acme/gadgets', html_url: `${WEB}/acme/gadgets` } },
    { type: 'issue', key: '9001', number: 1, data: issue(1, 9001, { title: 'Not an issue of widgets' }) },
    { type: 'label', key: '9002', data: { ...labelBug, id: 9002, name: 'gadget-only' } },
  ]);
  await db.db.insertInto('import_users').values({ import_id: other, login_key: 'stranger', login: 'stranger', run: 1 }).execute();

  // A third one with 101 milestones, for the format's 100 records per file.
  const bulk = await insertImport(db, 'bulk', 'acme', 'bulk');
  await insertObjects(db, bulk, [
    { type: 'repository', key: 'repository', data: { ...repositoryData, id: 44, name: 'bulk', full_name: 'acme/bulk', html_url: `${WEB}/acme/bulk` } },
    ...Array.from({ length: 101 }, (_, i) => ({ type: 'milestone', key: String(700_000 + i), number: i + 1, data: milestone(i + 1, 700_000 + i, `m${i + 1}`, 'open') })),
  ]);
}

// --- Reading an archive back --------------------------------------------------------------------

const RECORD_FILE = /^([a-z_]+)_(\d{6})\.json$/;

/** Every JSON file of records in the archive, parsed, by file name. */
async function recordFiles(dir: string): Promise<Map<string, Json[]>> {
  const files = new Map<string, Json[]>();
  for (const name of (await readdir(dir)).sort()) {
    if (!RECORD_FILE.test(name)) continue;
    const parsed: unknown = JSON.parse(await readFile(join(dir, name), 'utf8'));
    expect(Array.isArray(parsed), `${name} is a JSON array`).toBe(true);
    files.set(name, parsed as Json[]);
  }
  return files;
}

/** All records of one type (`issues` → issues_000001.json, issues_000002.json, …), in file order. */
function recordsOf(files: Map<string, Json[]>, prefix: string): Json[] {
  return [...files].filter(([name]) => RECORD_FILE.exec(name)?.[1] === prefix).flatMap(([, records]) => records);
}

async function listTree(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { recursive: true, withFileTypes: true });
  return entries.filter((entry) => entry.isFile()).map((entry) => relative(dir, join(entry.parentPath, entry.name))).sort();
}

const REFERENCE_FIELDS = ['user', 'actor', 'owner', 'repository', 'repository_url', 'issue', 'pull_request', 'pull_request_review', 'pull_request_review_thread', 'in_reply_to', 'milestone', 'issue_comment', 'subject', 'label', 'organization', 'release', 'reviewer'];
const REFERENCE_LISTS = ['labels', 'assignees', 'authorized_user_urls', 'authorized_team_urls', 'dismissal_restricted_user_urls', 'dismissal_restricted_team_urls'];

/** Every URL-valued reference in a record (and in the records it embeds): `[field, url]`. */
function referencesOf(record: Json): [string, string][] {
  const found: [string, string][] = [];
  for (const field of REFERENCE_FIELDS) if (typeof record[field] === 'string') found.push([field, record[field]]);
  for (const field of REFERENCE_LISTS) for (const value of record[field] ?? []) if (typeof value === 'string') found.push([field, value]);
  for (const nested of [...(record.review_requests ?? []), ...(record.collaborators ?? []), ...(record.release_assets ?? [])]) found.push(...referencesOf(nested));
  for (const side of ['base', 'head']) if (record[side]) for (const field of ['user', 'repo']) if (typeof record[side][field] === 'string' && record[side][field].startsWith(`${REPO_URL}`)) found.push([`${side}.${field}`, record[side][field]]);
  return found;
}

function archivePath(url: string): string {
  expect(url.startsWith('tarball://root/')).toBe(true);
  return url.slice('tarball://root/'.length);
}

// --- Tests --------------------------------------------------------------------------------------

describe.each(['sqlite', 'postgres'] as const)('import export (%s)', (kind) => {
  let testDb: TestDatabase;
  let database: Database;
  let filesDir: string;

  beforeAll(async () => {
    testDb = await createTestDatabase(kind);
    database = await openDatabase(testDb.url);
    filesDir = await tempDir('forgesync-import-files-');
    await seed(database, filesDir);
  });

  afterAll(async () => {
    await database?.close();
    await testDb?.drop();
  });

  /** A bare repository for the code, none for the wiki. */
  const copyRepository: ExportOptions['copyRepository'] = async (which, dest) => {
    if (which === 'wiki') return false;
    await run('git', ['init', '--bare', '--quiet', dest]);
    return true;
  };

  async function freshParent(): Promise<string> {
    return tempDir('forgesync-export-');
  }

  function options(to: string, extra: Partial<ExportOptions> = {}): ExportOptions {
    return { database, filesDir, name: 'acme-widgets', to, copyRepository, ...extra };
  }

  describe('a full export', () => {
    let summary: ExportSummary;
    let dir: string;
    let files: Map<string, Json[]>;

    beforeAll(async () => {
      const parent = await freshParent();
      summary = await exportImport(options(join(parent, 'archive')));
      dir = summary.dir;
      files = await recordFiles(dir);
    });

    it('writes schema.json and lists every record file, each of which exists, parses and holds the count listed', async () => {
      expect(JSON.parse(await readFile(join(dir, 'schema.json'), 'utf8'))).toEqual({ version: '1.1.0' });
      expect(Object.keys(summary.files).sort()).toEqual([...files.keys()].sort());
      for (const [name, count] of Object.entries(summary.files)) expect(files.get(name)?.length, name).toBe(count);
    });

    it('holds one record per stored object of the import, by type, and nothing of other imports', () => {
      expect(summary.files).toEqual({
        'attachments_000001.json': 2,
        'issue_comments_000001.json': 3,
        'issue_events_000001.json': 3,
        'issues_000001.json': 2,
        'labels_000001.json': 2,
        'milestones_000001.json': 2,
        'organizations_000001.json': 1,
        'protected_branches_000001.json': 1,
        'pull_request_review_comments_000001.json': 2,
        'pull_request_review_threads_000001.json': 1,
        'pull_request_reviews_000001.json': 2,
        'pull_requests_000001.json': 2,
        'releases_000001.json': 2,
        'repositories_000001.json': 1,
        'teams_000001.json': 1,
        'users_000001.json': 3,
      });
      for (const [name, records] of files) {
        const type = RECORD_FILE.exec(name)![1]!;
        const singular = type === 'repositories' ? 'repository' : type === 'protected_branches' ? 'protected_branch' : type.replace(/s$/, '');
        for (const record of records) expect(record.type, name).toBe(singular);
      }
      expect(recordsOf(files, 'issues').map((record) => record.url)).toEqual([`${REPO_URL}/issues/1`, `${REPO_URL}/issues/2`]);
      expect(recordsOf(files, 'labels').map((record) => record.name)).toEqual(['bug', 'help wanted']);
    });

    it('exports the users of the import found on its API host, once each', () => {
      const users = recordsOf(files, 'users');
      expect(users.map((record) => record.login)).toEqual(['hubot', 'monalisa', 'octocat']);
      expect(users.find((record) => record.login === 'octocat')).toMatchObject({
        url: `${WEB}/octocat`,
        name: 'The Octocat',
        website: 'https://github.blog',
        emails: [{ address: 'octocat@github.com', primary: true, verified: true }],
      });
    });

    it('references records by URL, and every reference names a record in the archive', () => {
      const urls = new Set<string>();
      for (const records of files.values()) {
        for (const record of records) {
          urls.add(record.url);
          for (const label of record.labels ?? []) if (typeof label === 'object') urls.add(label.url);
        }
      }
      let checked = 0;
      for (const [name, records] of files) {
        for (const record of records) {
          for (const [field, url] of referencesOf(record)) {
            // Attachments keep GitHub's URL as their own `url`; only references between records are checked here.
            expect(urls.has(url), `${name}: ${record.url} ${field} → ${url}`).toBe(true);
            checked++;
          }
        }
      }
      expect(checked).toBeGreaterThan(60);

      const comments = recordsOf(files, 'issue_comments');
      expect(comments.find((record) => record.url.endsWith('#issuecomment-1003'))).toMatchObject({ pull_request: `${REPO_URL}/pull/3`, user: `${WEB}/octocat` });
      expect(comments.find((record) => record.url.endsWith('#issuecomment-1002'))).toMatchObject({ issue: `${REPO_URL}/issues/2` });
      const events = recordsOf(files, 'issue_events');
      expect(events.find((record) => record.event === 'merged')).toMatchObject({ pull_request: `${REPO_URL}/pull/3`, url: `${REPO_URL}/pull/3#event-5002` });
      expect(events.find((record) => record.event === 'labeled')).toMatchObject({ issue: `${REPO_URL}/issues/1`, label: `${REPO_URL}/labels/bug`, label_name: 'bug' });
      expect(events.find((record) => record.event === 'closed')).toMatchObject({ commit_repository: REPO_URL });
      const [root, reply] = recordsOf(files, 'pull_request_review_comments');
      expect(root).toMatchObject({ pull_request_review: `${REPO_URL}/pull/3/files#pullrequestreview-80`, in_reply_to: null });
      expect(reply).toMatchObject({ in_reply_to: root!.url, pull_request_review_thread: root!.pull_request_review_thread });
      expect(recordsOf(files, 'pull_request_reviews').map((record) => record.state)).toEqual([40, 30]);
      const pull4 = recordsOf(files, 'pull_requests').find((record) => record.url === `${REPO_URL}/pull/4`)!;
      expect(pull4).toMatchObject({ work_in_progress: true, head: { repo: `${WEB}/hubot/widgets` }, base: { repo: REPO_URL } });
      expect(pull4.review_requests.map((request: Json) => [request.reviewer_type, request.reviewer])).toEqual([
        ['Team', `${WEB}/orgs/acme/teams/justice-league`],
        ['User', `${WEB}/monalisa`],
      ]);
      const issue1 = recordsOf(files, 'issues')[0]!;
      expect(issue1).toMatchObject({ milestone: `${REPO_URL}/milestones/1`, labels: [`${REPO_URL}/labels/bug`], assignee: `${WEB}/monalisa` });
    });

    it('writes the repository record with its labels, collaborators and git URL, and the bare repository it points at', async () => {
      const [repository] = recordsOf(files, 'repositories');
      expect(repository).toMatchObject({
        type: 'repository',
        url: REPO_URL,
        owner: `${WEB}/acme`,
        name: 'widgets',
        private: true,
        default_branch: 'main',
        git_url: 'tarball://root/repositories/acme/widgets.git',
        collaborators: [
          { user: `${WEB}/hubot`, permission: 'write' },
          { user: `${WEB}/octocat`, permission: 'admin' },
        ],
      });
      expect(repository!.labels.map((label: Json) => label.url)).toEqual([`${REPO_URL}/labels/bug`, `${REPO_URL}/labels/help%20wanted`]);
      expect(repository).not.toHaveProperty('wiki_url');
      expect(summary.repositories).toEqual(['repositories/acme/widgets.git']);
      const gitDir = join(dir, archivePath(repository!.git_url));
      const { stdout } = await run('git', ['--git-dir', gitDir, 'rev-parse', '--is-bare-repository']);
      expect(stdout.trim()).toBe('true');
      expect(existsSync(join(dir, 'repositories/acme/widgets.wiki.git'))).toBe(false);
    });

    it('puts each attachment file in once, with the same bytes, and points the bodies at it', async () => {
      const attachmentFiles = (await listTree(dir)).filter((path) => path.startsWith('attachments/'));
      expect(attachmentFiles).toEqual([`attachments/${PNG_SHA}/screenshot.png`, `attachments/${TARBALL_SHA}/widgets-1.0.0.tar.gz`].sort());
      expect(summary.attachments).toBe(2);
      expect(summary.missingAttachments).toBe(0);
      const archived = `tarball://root/attachments/${PNG_SHA}/screenshot.png`;
      expect(await readFile(join(dir, archivePath(archived)))).toEqual(PNG);

      const [issue1, issue2] = recordsOf(files, 'issues');
      expect(issue1!.body).toBe(`It crashes on start.\n\n![screenshot](${archived})\n\nLog: [crash.log](${PENDING_URL})`);
      // A longer URL that merely starts with an attachment's is left alone.
      expect(issue2!.body).toBe(`Old screenshot: <img src="${archived}" width="300">\nNot an attachment: ${ATTACHMENT_URL}/raw`);
      const comment = recordsOf(files, 'issue_comments').find((record) => record.url.endsWith('#issuecomment-1001'))!;
      expect(comment.body).toBe(`Same here: ![again](${archived}).`);

      expect(recordsOf(files, 'attachments')).toEqual([
        {
          type: 'attachment',
          url: ATTACHMENT_URL,
          issue: `${REPO_URL}/issues/1`,
          user: `${WEB}/octocat`,
          asset_name: 'screenshot.png',
          asset_content_type: 'image/png',
          asset_url: archived,
          created_at: '2024-01-11T09:00:00Z',
        },
        expect.objectContaining({ url: LEGACY_ATTACHMENT_URL, issue: `${REPO_URL}/issues/2`, asset_url: archived }),
      ]);

      const [v100, v110] = recordsOf(files, 'releases');
      expect(v110!.release_assets).toEqual([]);
      expect(v100!.release_assets).toEqual([expect.objectContaining({ url: ASSET_URL, asset_name: 'widgets-1.0.0.tar.gz', release: `${REPO_URL}/releases/tag/v1.0.0` })]);
      expect(await readFile(join(dir, archivePath(v100!.release_assets[0].asset_url)))).toEqual(TARBALL);
    });

    it('maps branch protection to the archive fields', () => {
      expect(recordsOf(files, 'protected_branches')[0]).toMatchObject({
        name: 'main',
        url: `${REPO_URL}/protected_branches/main`,
        repository_url: REPO_URL,
        admin_enforced: true,
        block_force_pushes_enforcement_level: 2,
        pull_request_reviews_enforcement_level: 'everyone',
        required_approving_review_count: 2,
        required_status_checks: ['ci/build'],
        strict_required_status_checks_policy: true,
        authorized_user_urls: [`${WEB}/octocat`],
        authorized_team_urls: [`${WEB}/orgs/acme/teams/justice-league`],
        requires_linear_history: true,
        requires_review_thread_resolution: true,
      });
    });
  });

  it('starts a new file every recordsPerFile records, reading in batches of batchSize', async () => {
    const parent = await freshParent();
    const summary = await exportImport(options(join(parent, 'archive'), { recordsPerFile: 1, batchSize: 1 }));
    const files = await recordFiles(summary.dir);
    expect(summary.files['issues_000001.json']).toBe(1);
    expect(summary.files['issues_000002.json']).toBe(1);
    expect(files.has('issues_000003.json')).toBe(false);
    expect(Object.keys(summary.files).filter((name) => name.startsWith('issue_comments_'))).toEqual([
      'issue_comments_000001.json',
      'issue_comments_000002.json',
      'issue_comments_000003.json',
    ]);
    for (const [name, records] of files) expect(records, name).toHaveLength(1);
    expect(recordsOf(files, 'issues').map((record) => record.url)).toEqual([`${REPO_URL}/issues/1`, `${REPO_URL}/issues/2`]);
    expect(recordsOf(files, 'users').map((record) => record.login)).toEqual(['hubot', 'monalisa', 'octocat']);
    expect(recordsOf(files, 'attachments')).toHaveLength(2);
  });

  it('puts 100 records in a file by default, as GitHub does', async () => {
    const parent = await freshParent();
    const summary = await exportImport(options(join(parent, 'archive'), { name: 'bulk' }));
    expect(summary.files['milestones_000001.json']).toBe(100);
    expect(summary.files['milestones_000002.json']).toBe(1);
    const files = await recordFiles(summary.dir);
    expect(new Set(recordsOf(files, 'milestones').map((record) => record.url)).size).toBe(101);
  });

  it('exports into an existing empty directory, finding the import by name in any case', async () => {
    const parent = await freshParent();
    const to = join(parent, 'archive');
    await mkdir(to);
    const summary = await exportImport(options(to, { name: 'ACME-Widgets' }));
    expect(summary.dir).toBe(to);
    expect(summary.files['issues_000001.json']).toBe(2);
    expect(await readdir(parent)).toEqual(['archive']);
  });

  it('refuses an existing non-empty target and leaves it untouched', async () => {
    const parent = await freshParent();
    const to = join(parent, 'archive');
    await mkdir(to);
    await writeFile(join(to, 'keep.txt'), 'mine');
    const attempt = exportImport(options(to));
    await expect(attempt).rejects.toBeInstanceOf(ExportTargetNotEmptyError);
    await expect(attempt).rejects.toThrow(/already exists and is not empty/);
    expect(await readdir(to)).toEqual(['keep.txt']);
    expect(await readFile(join(to, 'keep.txt'), 'utf8')).toBe('mine');
    expect(await readdir(parent)).toEqual(['archive']);

    const file = join(parent, 'a-file');
    await writeFile(file, 'not a directory');
    await expect(exportImport(options(file))).rejects.toBeInstanceOf(ExportTargetNotDirectoryError);
    expect(await readFile(file, 'utf8')).toBe('not a directory');
  });

  it('gives a typed not-found error for an unknown import, writing nothing', async () => {
    const parent = await freshParent();
    const attempt = exportImport(options(join(parent, 'archive'), { name: 'no-such-import' }));
    await expect(attempt).rejects.toBeInstanceOf(ImportNotFoundError);
    await expect(attempt).rejects.toBeInstanceOf(NotFoundError);
    await expect(attempt).rejects.toThrow(/no import is named "no-such-import"/);
    expect(await readdir(parent)).toEqual([]);
  });

  it('refuses a records-per-file count that is not a positive integer', async () => {
    const parent = await freshParent();
    await expect(exportImport(options(join(parent, 'archive'), { recordsPerFile: 0 }))).rejects.toBeInstanceOf(InvalidExportOptionError);
    expect(await readdir(parent)).toEqual([]);
  });

  it('leaves no target and no temporary directory when copying the repository fails', async () => {
    const parent = await freshParent();
    const to = join(parent, 'archive');
    const failing: ExportOptions['copyRepository'] = async (which, dest) => {
      await mkdir(dest, { recursive: true });
      await writeFile(join(dest, 'HEAD'), 'ref: refs/heads/main\n');
      throw new Error(`cannot clone the ${which}: disk full`);
    };
    await expect(exportImport(options(to, { copyRepository: failing }))).rejects.toThrow('cannot clone the repository: disk full');
    expect(existsSync(to)).toBe(false);
    expect(await readdir(parent)).toEqual([]);
  });

  it('leaves no target and no temporary directory when it fails after records were written', async () => {
    const parent = await freshParent();
    const to = join(parent, 'archive');
    // The attachment's stored "file" is a directory: copying it fails while issues are being written.
    const brokenFiles = await tempDir('forgesync-import-files-');
    await mkdir(join(brokenFiles, PNG_SHA));
    await expect(exportImport(options(to, { filesDir: brokenFiles, recordsPerFile: 1 }))).rejects.toThrow();
    expect(existsSync(to)).toBe(false);
    expect(await readdir(parent)).toEqual([]);
  });

  it('leaves links to attachments whose file is missing as they were, and counts them', async () => {
    const parent = await freshParent();
    const emptyFiles = await tempDir('forgesync-import-files-');
    const summary = await exportImport(options(join(parent, 'archive'), { filesDir: emptyFiles }));
    const files = await recordFiles(summary.dir);
    expect(summary.attachments).toBe(0);
    expect(summary.missingAttachments).toBe(3);
    expect(recordsOf(files, 'issues')[0]!.body).toContain(`![screenshot](${ATTACHMENT_URL})`);
    expect(files.has('attachments_000001.json')).toBe(false);
    expect(existsSync(join(summary.dir, 'attachments'))).toBe(false);
  });
});
