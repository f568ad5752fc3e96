import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FakeProject, fixturePath, SchemaChecker, smallProject, type Schema } from '../fake-github/index.js';
import { importFakeToCopy, type Answer, type FakeAndCopy } from './support/fake-vs-copy.js';
import { archiveFiles } from './support/archives.js';

/*
 * The repository's git data (issue 28): every git-data endpoint asked of
 * the fake GitHub (computed from its bare repository with the git CLI) and
 * of forgesync's copy (read from the import's mirror), compared field by
 * field — statuses, bodies, Link headers, raw bytes, and the files inside
 * the archives — plus hostile refs and paths, and GitHub's response schemas.
 */

const spec = JSON.parse(readFileSync(fixturePath('openapi-schemas.json'), 'utf8')) as { operations: Record<string, Schema>; components: Record<string, Schema> };
const checker = new SchemaChecker(spec.components);

let pair: FakeAndCopy;
let repo: string;
let first: string;
let tip: string;

/** Both answers of `path` (below the repository), asserting the copy's status and body are the fake's; errors by status and message. */
async function same(path: string, headers: Record<string, string> = {}): Promise<{ fake: Answer; copy: Answer }> {
  const answers = await pair.both(`${repo}${path}`, headers);
  expect({ path, status: answers.copy.status }).toEqual({ path, status: answers.fake.status });
  if (answers.fake.status >= 400) {
    expect((answers.copy.body as { message: string }).message).toBe((answers.fake.body as { message: string }).message);
  } else {
    expect(answers.copy.body).toEqual(answers.fake.body);
  }
  return answers;
}

/** The schema of `operation` holds for `body`. */
function conforms(operation: string, body: unknown): void {
  const schema = spec.operations[operation];
  expect(schema, operation).toBeDefined();
  expect(checker.check(body, schema as Schema)).toEqual([]);
}

/** A Link header without its `last` relation (the copy does not count the whole history for a page of commits). */
function withoutLast(link: string | undefined): string | undefined {
  const kept = (link ?? '').split(', ').filter((part) => part !== '' && !part.endsWith('rel="last"'));
  return kept.length > 0 ? kept.join(', ') : undefined;
}

async function bytesOf(url: string, token: string): Promise<{ status: number; bytes: Buffer; type: string | null }> {
  const response = await fetch(url, { headers: { authorization: `token ${token}`, 'user-agent': 'forgesync-tests' } });
  return { status: response.status, bytes: Buffer.from(await response.arrayBuffer()), type: response.headers.get('content-type') };
}

describe('git data on the copy, as GitHub serves it', () => {
  beforeAll(async () => {
    const project = smallProject();
    // More shapes of git data: a file past GitHub's 1 MiB inline limit, nested directories, a changed and a removed file.
    project.addCommit({
      message: 'Add the guide and the test data\n\nLonger description.',
      author: 'carol',
      files: [
        { path: 'docs/deep/nested/guide.md', content: '# Guide\n\nStep one.\n' },
        { path: 'data/big.txt', content: 'forgesync '.repeat(120_000) },
        { path: 'README.md', content: '# widgets\n\nNow with a guide.\n' },
      ],
    });
    pair = await importFakeToCopy({ project });
    repo = `/repos/${pair.project}`;
    const commits = (await pair.fake(`${repo}/commits?per_page=100`)).body as { sha: string }[];
    tip = commits[0]!.sha;
    first = commits.at(-1)!.sha;
  }, 180_000);

  afterAll(async () => {
    await pair?.close();
  });

  it('lists and gets branches, with the protected filter and slashes in names', async () => {
    conforms('repos/list-branches', (await same('/branches')).copy.body);
    const onlyProtected = (await same('/branches?protected=true')).copy.body as { name: string }[];
    expect(onlyProtected.map((branch) => branch.name)).toEqual(['main', 'release/1.x']);
    await same('/branches?protected=false');
    await same('/branches?per_page=1&page=2');
    conforms('repos/get-branch', (await same('/branches/main')).copy.body);
    const slashed = await same('/branches/release/1.x');
    expect((slashed.copy.body as { protected: boolean }).protected).toBe(true);
    await same('/branches/release%2F1.x');
    await same('/branches/release/1.x/protection');
    expect((await same('/branches/no-such-branch')).copy.status).toBe(404);
  });

  it('lists tags', async () => {
    const { copy } = await same('/tags');
    expect((copy.body as { name: string }[]).map((tag) => tag.name)).toContain('v1.0.0');
    conforms('repos/list-tags', copy.body);
  });

  it('lists commits with every filter, a page at a time', async () => {
    const all = await same('/commits?per_page=100');
    conforms('repos/list-commits', all.copy.body);
    expect((all.copy.body as { author: { login: string } | null }[]).some((commit) => commit.author?.login === 'alice')).toBe(true);
    const paged = await same('/commits?per_page=2&page=2');
    expect(paged.copy.headers.link).toBe(withoutLast(paged.fake.headers.link));
    expect(paged.copy.headers.link).toContain('rel="next"');
    await same('/commits?path=src/widget.txt');
    await same('/commits?author=bob');
    await same('/commits?committer=alice&per_page=3');
    await same('/commits?author=nobody-at-all');
    const bobEmail = ((all.fake.body as { commit: { author: { name: string; email: string } } }[]).find((c) => c.commit.author.name === 'bob')!).commit.author.email;
    const byEmail = await same(`/commits?author=${encodeURIComponent(bobEmail)}`);
    expect((byEmail.copy.body as unknown[]).length).toBeGreaterThan(0);
    // A window strictly inside the history: some commits in it, some before and after.
    const dates = (all.fake.body as { commit: { committer: { date: string } } }[]).map((commit) => commit.commit.committer.date).sort();
    const [since, until] = [dates[Math.floor(dates.length / 4)]!, dates[Math.floor((3 * dates.length) / 4)]!];
    const windowed = await same(`/commits?since=${since}&until=${until}&per_page=100`);
    expect((windowed.copy.body as unknown[]).length).toBeGreaterThan(0);
    expect((windowed.copy.body as unknown[]).length).toBeLessThan(dates.length - 1);
    await same('/commits?sha=release/1.x&per_page=5');
    await same(`/commits?sha=${first}`);
  });

  it('gets a commit, by sha, branch or tag, with its files and patches', async () => {
    const bySha = await same(`/commits/${tip}`);
    conforms('repos/get-commit', bySha.copy.body);
    const files = (bySha.copy.body as { files: { filename: string; status: string; patch?: string }[] }).files;
    expect(files.map((file) => [file.filename, file.status])).toEqual([['README.md', 'modified'], ['data/big.txt', 'added'], ['docs/deep/nested/guide.md', 'added']]);
    // The 1.2 MB one-line file's patch is left out, as GitHub leaves out very large diffs.
    expect(files.map((file) => file.patch !== undefined)).toEqual([true, false, true]);
    await same(`/commits/${first}`);
    await same('/commits/main');
    await same('/commits/v1.0.0');
    await same(`/commits/${tip.slice(0, 10)}`);
  });

  it('compares two refs', async () => {
    const compared = await same(`/compare/${first}...main`);
    conforms('repos/compare-commits-with-basehead', compared.copy.body);
    expect((compared.copy.body as { status: string }).status).toBe('ahead');
    await same(`/compare/main...${first}`);
    await same('/compare/main...release/1.x');
    await same('/compare/main...main');
    await same('/compare/main..main');
    await same('/compare/main...no-such-ref');
  });

  it("lists a pull request's commits and files (its base sha compared with refs/pull/<n>/head), a page at a time", async () => {
    // The fake writes one commit per pull request (test/fake-github/git.ts): each lists one commit and one file.
    const pull = (await same('/pulls/3')).copy.body as { head: { sha: string }; base: { sha: string } };
    const commits = await same('/pulls/3/commits');
    conforms('pulls/list-commits', commits.copy.body);
    expect((commits.copy.body as { sha: string; parents: { sha: string }[] }[]).map((commit) => [commit.sha, commit.parents[0]?.sha])).toEqual([[pull.head.sha, pull.base.sha]]);
    const files = await same('/pulls/3/files');
    conforms('pulls/list-files', files.copy.body);
    const [file] = files.copy.body as { filename: string; status: string; blob_url: string; patch?: string }[];
    expect([file?.filename, file?.status, file?.patch?.startsWith('@@')]).toEqual(['changes/0/pr-3.txt', 'added', true]);
    expect(file?.blob_url).toMatch(new RegExp(`/blob/${pull.head.sha}/changes/0/pr-3\\.txt$`));
    for (const number of [5, 8, 11, 14, 17]) {
      await same(`/pulls/${number}/commits`);
      await same(`/pulls/${number}/files`);
    }
    // Past the end: an empty page whose Link header names the repository by id, as GitHub's does.
    for (const path of ['/pulls/5/commits?per_page=1&page=2', '/pulls/5/files?per_page=1&page=2']) {
      const beyond = await same(path);
      expect(beyond.copy.body).toEqual([]);
      expect(beyond.copy.headers.link).toContain('/repositories/');
      expect(beyond.copy.headers.link).toBe(beyond.fake.headers.link);
    }
    await same('/pulls/5/commits?per_page=1000');
    // No such pull request, and an issue's number: GitHub's 404.
    for (const path of ['/pulls/999/commits', '/pulls/999/files', '/pulls/1/commits', '/pulls/1/files']) {
      expect((await same(path)).copy.status).toBe(404);
    }
  });

  it('answers refs, commit objects, trees and blobs', async () => {
    conforms('git/list-matching-refs', (await same('/git/refs')).copy.body);
    await same('/git/refs/heads');
    conforms('git/get-ref', (await same('/git/refs/heads/main')).copy.body);
    await same('/git/refs/tags/v1.0.0');
    await same('/git/refs/heads/no-such');
    conforms('git/list-matching-refs', (await same('/git/matching-refs/heads/rel')).copy.body);
    await same('/git/matching-refs/heads/zzz');
    conforms('git/get-ref', (await same('/git/ref/heads/release/1.x')).copy.body);
    await same('/git/ref/heads/no-such');
    const commit = await same(`/git/commits/${tip}`);
    conforms('git/get-commit', commit.copy.body);
    const treeSha = (commit.copy.body as { tree: { sha: string } }).tree.sha;
    conforms('git/get-tree', (await same(`/git/trees/${treeSha}`)).copy.body);
    const recursive = await same(`/git/trees/${treeSha}?recursive=1`);
    const entries = (recursive.copy.body as { tree: { path: string; type: string; sha: string }[] }).tree;
    expect(entries.map((entry) => entry.path)).toContain('src/widget.txt');
    await same('/git/trees/main');
    const blob = entries.find((entry) => entry.path === 'README.md')!;
    conforms('git/get-blob', (await same(`/git/blobs/${blob.sha}`)).copy.body);
    const raw = await same(`/git/blobs/${blob.sha}`, { accept: 'application/vnd.github.raw' });
    expect(raw.copy.text).toBe('# widgets\n\nNow with a guide.\n');
    const big = entries.find((entry) => entry.path === 'data/big.txt')!;
    expect(((await same(`/git/blobs/${big.sha}`)).copy.body as { size: number }).size).toBe(1_200_000);
  });

  it('answers contents: files as base64, directories as lists, the raw and object media types, and the README', async () => {
    const file = await same('/contents/README.md');
    conforms('repos/get-content', file.copy.body);
    expect(Buffer.from((file.copy.body as { content: string }).content, 'base64').toString('utf8')).toBe('# widgets\n\nNow with a guide.\n');
    const big = await same('/contents/data/big.txt');
    expect(big.copy.body).toMatchObject({ encoding: 'none', content: '', size: 1_200_000 });
    const bigRaw = await same('/contents/data/big.txt', { accept: 'application/vnd.github.raw' });
    expect(bigRaw.copy.text.length).toBe(1_200_000);
    await same('/contents/docs/deep');
    await same('/contents/docs/deep/nested/guide.md?ref=main');
    await same(`/contents/README.md?ref=${first}`);
    conforms('repos/get-content', (await same('/contents')).copy.body);
    await same('/contents/src');
    await same(`/contents/src/widget.txt?ref=${tip}`);
    await same('/contents/README.md?ref=release/1.x');
    const raw = await same('/contents/src/widget.txt', { accept: 'application/vnd.github.raw+json' });
    expect(raw.copy.text).toBe(raw.fake.text);
    expect(raw.copy.headers['content-type']).toBe(raw.fake.headers['content-type']);
    await same('/contents/src', { accept: 'application/vnd.github.object' });
    await same('/contents/no/such/file');
    await same('/contents/README.md?ref=no-such-ref');
    conforms('repos/get-readme', (await same('/readme')).copy.body);
    await same('/readme', { accept: 'application/vnd.github.raw' });
    await same('/readme/src');
  });

  it('answers archives whose files are the fake\'s (both redirect, as GitHub does, to a download on the same host)', async () => {
    for (const [route, format] of [['tarball', 'tar.gz'], ['zipball', 'zip']] as const) {
      for (const ref of ['', '/main', '/v1.0.0', `/${first}`]) {
        const redirect = await fetch(`${pair.copyBase}${repo}/${route}${ref}`, { headers: { authorization: `token ${pair.readToken}` }, redirect: 'manual' });
        expect(redirect.status).toBe(302);
        expect(redirect.headers.get('location')).toMatch(new RegExp(`^${pair.copyBase}${repo}/_codeload/${format.replace('.', '\\.')}/[0-9a-f]{40}$`));
        const fake = await bytesOf(`${pair.harness.fake.apiUrl}${repo}/${route}${ref}`, pair.harness.token);
        const copy = await bytesOf(`${pair.copyBase}${repo}/${route}${ref}`, pair.readToken);
        expect([copy.status, fake.status]).toEqual([200, 200]);
        expect(copy.type).toBe(fake.type);
        const files = archiveFiles(copy.bytes, format);
        expect(Object.keys(files).length).toBeGreaterThan(0);
        expect(files).toEqual(archiveFiles(fake.bytes, format));
      }
    }
    expect((await same('/tarball/no-such-ref')).copy.status).toBe(404);
  });

  it('refuses hostile refs, paths, shas and page sizes as GitHub does', async () => {
    expect((await same('/commits/--upload-pack=x')).copy.status).toBe(422);
    await same('/commits?sha=--upload-pack%3Dx');
    await same('/commits?path=..%2F..%2Fetc');
    await same('/commits?path=%2Fetc%2Fpasswd');
    await same('/contents/src%2F..%2F..%2Fetc%2Fpasswd');
    await same('/contents/..%2F..%2F..%2Fetc%2Fpasswd');
    await same('/contents/README.md?ref=--output%3D%2Ftmp%2Fx');
    await same('/readme?ref=HEAD%40%7B0%7D');
    await same(`/git/commits/${'0'.repeat(40)}`);
    await same('/git/commits/--all');
    await same(`/git/blobs/${'0'.repeat(40)}`);
    expect((await same('/git/blobs/not-a-sha')).copy.status).toBe(422);
    await same(`/git/trees/${'0'.repeat(40)}`);
    await same('/git/trees/--upload-pack=x');
    await same('/git/ref/heads/..%2F..%2Fconfig');
    await same('/compare/--upload-pack=x...main');
    await same('/tarball/--output=x');
    await same('/commits?per_page=0');
    await same('/branches?per_page=1000');
    const huge = await same('/commits?per_page=1000');
    expect((huge.copy.body as unknown[]).length).toBeLessThanOrEqual(100);
    const beyond = await pair.copy(`${repo}/commits?page=999999`);
    expect([beyond.status, beyond.body]).toEqual([200, []]);
  });

  it('serves the same on the /repositories/{id} form, and nothing for an unknown repository', async () => {
    const id = ((await pair.copy(repo)).body as { id: number }).id;
    for (const path of ['/branches', '/commits?per_page=3', '/contents/src', '/git/refs/heads', '/pulls/3/commits', '/pulls/8/files']) {
      const [byName, byId] = await Promise.all([pair.copy(`${repo}${path}`), pair.copy(`/repositories/${id}${path}`)]);
      expect([path, byId.status, byId.body]).toEqual([path, 200, byName.body]);
    }
    const unknown = await pair.copy('/repos/nobody/nothing/commits');
    expect(unknown.status).toBe(404);
    expect((await pair.copy(`/repositories/${id}/pulls/999/files`)).status).toBe(404);
  });
});

describe('git data of an empty repository', () => {
  let empty: FakeAndCopy;

  beforeAll(async () => {
    const project = new FakeProject({ owner: 'acme-org', name: 'blank', hasWiki: false });
    project.createUser('alice');
    empty = await importFakeToCopy({ project });
  }, 180_000);

  afterAll(async () => {
    await empty?.close();
  });

  it('answers 409 "Git Repository is empty." as GitHub does', async () => {
    for (const path of ['/commits', '/branches/main', '/contents/README.md', '/readme', '/git/refs', `/git/commits/${'1'.repeat(40)}`, '/tarball']) {
      const { fake, copy } = await empty.both(`/repos/${empty.project}${path}`);
      expect([path, fake.status, (fake.body as { message: string }).message]).toEqual([path, 409, 'Git Repository is empty.']);
      expect([path, copy.status, (copy.body as { message: string }).message]).toEqual([path, 409, 'Git Repository is empty.']);
    }
  });
});
