import { execFile } from 'node:child_process';
import { existsSync, mkdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Forgesync } from '../../src/app/forgesync.js';
import { importFilesDir } from '../../src/importer/module.js';
import { buildServer, type ForgesyncServer } from '../../src/server/app.js';
import { createTestDatabase, openTestForgesync, testConfig, type TestDatabase } from '../support/harness.js';
import { testSecret } from '../support/secrets.js';
import { DIFF_NOTES, ISSUES, LABELS, MILESTONES, NOTES, OWNER, RELEASES, REPO, REVIEWS, seedProject, user } from './support/github-api-fixtures.js';

/*
 * PyGithub (Debian's python3-github), a client nobody here wrote, reads the
 * copy as its users write it: `Github(base_url=…/github)`, `get_repo`, then
 * lists and objects whose URLs it takes from the answers' `url`/`*_url`
 * fields and `Link` headers (refusing any outside its base). See
 * support/pygithub-calls.py for the calls; this compares what it printed
 * with the seeded project.
 */

const PYTHON = '/usr/bin/python3';
const SCRIPT = fileURLToPath(new URL('./support/pygithub-calls.py', import.meta.url));
const READ = testSecret('PYGITHUB_READ_TOKEN');
const ADMIN = testSecret('PYGITHUB_ADMIN_TOKEN');
const run = promisify(execFile);

interface PyGithubResult {
  repo: { full_name: string; description: string; url: string; html_url: string };
  issues: { number: number; title: string; state: string; labels: string[]; is_pull: boolean }[];
  issues_total: number;
  open_total: number;
  issue_1: { title: string; url: string; html_url: string; comments_url: string };
  comments_of_1: { id: number; body: string; user: string }[];
  author_of_1: { login: string; name: string };
  pulls: { number: number; title: string; state: string }[];
  labels: { name: string; color: string }[];
  label_total: number;
  labels_reversed: string[];
  releases: string[];
  milestones: { number: number; title: string; state: string }[];
  events_of_1: string[];
  pull_6_comments: number[];
  pull_6_reviews: number[];
  rate_limit: { limit: number; remaining: number; after_calls: number };
}

/** Runs the PyGithub script against `baseUrl`; the token goes in its environment, never its arguments. */
async function pygithub(baseUrl: string): Promise<PyGithubResult> {
  const { stdout } = await run(PYTHON, [SCRIPT, baseUrl], {
    env: { PATH: process.env.PATH ?? '/usr/bin:/bin', PYGITHUB_TOKEN: READ, PYTHONDONTWRITEBYTECODE: '1' },
    timeout: 60_000,
  });
  return JSON.parse(stdout) as PyGithubResult;
}

describe('PyGithub against the GitHub-compatible API', () => {
  let testDatabase: TestDatabase;
  let app: Forgesync;
  let server: ForgesyncServer;
  let origin: string;

  beforeAll(async () => {
    // The suite's environment installs Debian's python3-github (as it installs chromium).
    if (!existsSync('/usr/lib/python3/dist-packages/github/MainClass.py')) throw new Error('PyGithub is not installed: apt-get install python3-github');
    testDatabase = await createTestDatabase('sqlite');
    const config = testConfig(testDatabase.url);
    ({ app } = await openTestForgesync(config));
    const filesDir = importFilesDir(config.dataDir);
    mkdirSync(filesDir, { recursive: true });
    await seedProject(app.kernel.database, filesDir);
    // forgesync serve's own server: its Host check, error handler and every module's routes.
    server = await buildServer(app, { tokens: { admin: ADMIN, read: READ } });
    await server.listen({ port: 0, host: '127.0.0.1' });
    const address = server.server.address();
    if (!address || typeof address !== 'object') throw new Error('not listening');
    origin = `http://127.0.0.1:${address.port}`;
  });

  afterAll(async () => {
    await server?.close();
    await app?.close();
    await testDatabase?.drop();
  });

  it('follows the copy\'s links from the repository to its issues, comments, users, pulls, labels, releases and milestones', async () => {
    const got = await pygithub(`${origin}/github`);
    const copy = `${origin}/github/repos/${OWNER}/${REPO}`;

    expect(got.repo).toEqual({ full_name: `${OWNER}/${REPO}`, description: 'the github.com copy', url: copy, html_url: expect.stringMatching(/^https:\/\/github\.com\//) });
    // Newest first, in pages of 2 followed through the `Link` headers.
    const newestFirst = [...ISSUES].sort((a, b) => b.number - a.number);
    expect(got.issues).toEqual(
      newestFirst.map((seed) => ({ number: seed.number, title: seed.title, state: seed.state, labels: seed.labels, is_pull: seed.pull === true })),
    );
    expect(got.issues_total).toBe(ISSUES.length);
    expect(got.open_total).toBe(ISSUES.filter((seed) => seed.state === 'open').length);

    expect(got.issue_1).toEqual({
      title: 'Crash on start',
      url: `${copy}/issues/1`,
      html_url: `https://github.com/${OWNER}/${REPO}/issues/1`,
      comments_url: `${copy}/issues/1/comments`,
    });
    const notesOf1 = NOTES.filter((note) => note.number === 1).sort((a, b) => a.id - b.id);
    expect(got.comments_of_1.map((comment) => comment.id)).toEqual(notesOf1.map((note) => note.id));
    expect(got.comments_of_1[1]).toEqual({ id: 5002, body: 'Still happens on 2.0.', user: 'hubot' });
    // Attachment links in bodies still point at the stored copies.
    expect(got.comments_of_1[0]!.body).toContain(`${origin}/github/attachments/${REPO}/`);
    expect(got.author_of_1).toEqual({ login: 'octocat', name: user('octocat', 583231).name });

    expect(got.pulls).toEqual(
      ISSUES.filter((seed) => seed.pull)
        .sort((a, b) => b.number - a.number)
        .map((seed) => ({ number: seed.number, title: seed.title, state: seed.state })),
    );
    expect(got.pull_6_comments).toEqual(DIFF_NOTES.map((note) => note.id).sort((a, b) => a - b));
    expect(got.pull_6_reviews).toEqual(REVIEWS.map((review) => review.id).sort((a, b) => a - b));

    // GitHub lists labels by name, whatever the case.
    const byName = [...LABELS].sort((a, b) => (a.name.toLowerCase() < b.name.toLowerCase() ? -1 : 1));
    expect(got.labels).toEqual(byName.map((label) => ({ name: label.name, color: label.color })));
    expect(got.label_total).toBe(LABELS.length);
    expect(got.labels_reversed).toEqual(byName.map((label) => label.name).reverse());
    expect(got.releases).toEqual([...RELEASES].sort((a, b) => (a.created_at < b.created_at ? 1 : -1)).map((release) => release.tag_name));
    expect(got.milestones.map((milestone) => milestone.title).sort()).toEqual(MILESTONES.map((milestone) => milestone.title).sort());
    expect(got.milestones.find((milestone) => milestone.number === 4)).toEqual({ number: 4, title: 'v0.1', state: 'closed' });
    expect(got.events_of_1).toEqual(['labeled', 'assigned']);
    // GET /rate_limit, and the x-ratelimit headers PyGithub keeps from every answer (rate_limiting: remaining, limit).
    expect(got.rate_limit.remaining).toBe(got.rate_limit.limit);
    expect(got.rate_limit.limit).toBeGreaterThanOrEqual(5000);
    expect(got.rate_limit.after_calls).toBe(got.rate_limit.limit);
  }, 90_000);
});
