import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFakeGitHub, type FakeGitHub } from './server.js';
import { api } from './walk.js';

const TOKEN = 'git-token';
let fake: FakeGitHub;
let work: string;

/** Runs the git CLI without blocking the event loop (the fake answers from this process). */
function git(args: string[], cwd?: string): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile('git', args, { cwd, env: { PATH: process.env.PATH, HOME: work, GIT_CONFIG_NOSYSTEM: '1', GIT_TERMINAL_PROMPT: '0', GIT_ASKPASS: 'true' } }, (error, stdout, stderr) => {
      if (error) reject(new Error(`git ${args.join(' ')}: ${stderr || error.message}`));
      else resolve(stdout);
    });
  });
}

function withToken(url: string, token: string): string {
  const u = new URL(url);
  u.username = 'x-access-token';
  u.password = token;
  return u.href;
}

function refs(listing: string): Map<string, string> {
  return new Map(listing.trim().split('\n').map((line) => { const [sha, ref] = line.split('\t'); return [ref as string, sha as string]; }));
}

beforeAll(async () => {
  work = await mkdtemp(join(tmpdir(), 'fake-github-git-test-'));
  fake = await startFakeGitHub({ tokens: [TOKEN] });
});

afterAll(async () => {
  await fake?.close();
  await rm(work, { recursive: true, force: true });
});

describe('git over smart HTTP', () => {
  it('clones the repository with refs/pull/N/head for every pull request and real commit ids in the API', async () => {
    const dir = join(work, 'mirror.git');
    await git(['clone', '--quiet', '--mirror', withToken(fake.gitUrl, TOKEN), dir]);
    const listing = refs(await git(['for-each-ref', '--format=%(objectname)\t%(refname)'], dir));
    for (const pull of fake.project.pulls) expect(listing.has(`refs/pull/${pull.number}/head`), `#${pull.number}`).toBe(true);
    expect(listing.has('refs/heads/main')).toBe(true);
    expect(listing.has('refs/heads/release/1.x')).toBe(true);
    expect(listing.has('refs/tags/v1.0.0')).toBe(true);
    expect(listing.has('refs/heads/feature/3-improve-widget-3')).toBe(false);
    const pull = (await api(`${fake.apiUrl}/repos/acme-org/widgets/pulls/3`, { token: TOKEN })).body;
    expect(listing.get('refs/pull/3/head')).toBe(pull.head.sha);
    expect((await git(['rev-list', '--parents', '-n', '1', pull.merge_commit_sha], dir)).trim().split(' ')).toEqual([pull.merge_commit_sha, expect.any(String), pull.head.sha]);
    const branches = (await api(`${fake.apiUrl}/repos/acme-org/widgets/branches?protected=true`, { token: TOKEN })).body;
    expect(branches.find((b: { name: string }) => b.name === 'main').commit.sha).toBe(listing.get('refs/heads/main'));
    const events = (await api(`${fake.apiUrl}/repos/acme-org/widgets/issues/4/events`, { token: TOKEN })).body;
    const referenced = events.find((e: { event: string }) => e.event === 'referenced');
    expect((await git(['cat-file', '-t', referenced.commit_id], dir)).trim()).toBe('commit');
  });

  it('clones the wiki, also anonymously and without the .git suffix', async () => {
    const dir = join(work, 'wiki');
    await git(['clone', '--quiet', fake.wikiGitUrl, dir]);
    expect(await readFile(join(dir, 'Home.md'), 'utf8')).toMatch(/^# Welcome/);
    const listing = refs(await git(['ls-remote', fake.gitUrl.replace(/\.git$/, '')]));
    expect(listing.has('refs/pull/5/head')).toBe(true);
  });

  it('refuses an unknown token (401) sent up front, and pushes', async () => {
    // git sends URL credentials only after a 401, which a public repository never gives; a header is sent up front.
    const header = (token: string) => `http.extraHeader=Authorization: Basic ${Buffer.from(`x-access-token:${token}`).toString('base64')}`;
    await expect(git(['-c', header('wrong'), 'ls-remote', fake.gitUrl])).rejects.toThrow(/401|Authentication failed|Invalid username/);
    expect(refs(await git(['-c', header(TOKEN), 'ls-remote', fake.gitUrl])).has('refs/heads/main')).toBe(true);
    const statuses = fake.requests.filter((r) => r.pathKind === 'git').map((r) => r.status);
    expect(statuses).toContain(401);
    await expect(git(['push', withToken(fake.gitUrl, TOKEN), 'HEAD:refs/heads/x'], join(work, 'wiki'))).rejects.toThrow();
  });

  it('pushCommit and mergePull change upstream', async () => {
    const sha = await fake.pushCommit({ repo: 'main', message: 'Upstream change' });
    let listing = refs(await git(['ls-remote', fake.gitUrl]));
    expect(listing.get('refs/heads/main')).toBe(sha);
    const wikiSha = await fake.pushCommit({ repo: 'wiki', message: 'Edit Home' });
    expect(refs(await git(['ls-remote', fake.wikiGitUrl])).get('refs/heads/master')).toBe(wikiSha);
    await git(['pull', '--quiet', '--ff-only'], join(work, 'wiki'));
    expect(await readFile(join(work, 'wiki', 'Home.md'), 'utf8')).toContain('Edit Home');
    const merge = await fake.mergePull(5, 'alice');
    listing = refs(await git(['ls-remote', fake.gitUrl]));
    expect(listing.get('refs/heads/main')).toBe(merge);
    expect(listing.has('refs/heads/feature/5-improve-widget-5')).toBe(false);
    const pull = (await api(`${fake.apiUrl}/repos/acme-org/widgets/pulls/5`, { token: TOKEN })).body;
    expect(pull).toMatchObject({ merged: true, merge_commit_sha: merge, merged_by: { login: 'alice' } });
  });

  it('a private repository needs credentials', async () => {
    const other = await startFakeGitHub({ tokens: [TOKEN], requireGitAuth: true });
    try {
      await expect(git(['ls-remote', other.gitUrl])).rejects.toThrow();
      expect(refs(await git(['ls-remote', withToken(other.gitUrl, TOKEN)])).has('refs/heads/main')).toBe(true);
    } finally {
      await other.close();
    }
  });
});
