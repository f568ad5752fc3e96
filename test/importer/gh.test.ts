import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { nodeId, type IssueRecord } from '../fake-github/index.js';
import { captureGhQueries } from './support/gh-capture.js';
import { argsFor, ghCommands, type GhCommand } from './support/gh-commands.js';
import { expectedIssue, expectedPull, expectedReleaseLines, githubTime, issueFromGh, pullFromGh, webPage } from './support/gh-expected.js';
import { startGhFront, type GhFront } from './support/gh-front.js';
import { ghProject } from './support/gh-project.js';
import { importFakeToCopy, type FakeAndCopy } from './support/fake-vs-copy.js';
import { ghRepo, requireGh, runGh, type GhRun, type GhTarget } from './support/run-gh.js';

/*
 * Debian's gh CLI (2.23), a client nobody here wrote, reads the copy as its
 * users run it: `GH_HOST` naming a TLS front (gh speaks https only to an
 * enterprise host) that passes `/api/v3/…` to the copy's `/github/…` and
 * `/api/graphql` to its GraphQL endpoint. What gh prints is compared with
 * the fake GitHub's records (issue 28): `--json` output field by field,
 * the plain (non-terminal) output line by line, and `gh api --paginate`
 * over REST with the same request made of the fake itself. The commands are
 * those whose queries test/importer/fixtures/gh-queries holds.
 */

const FIXTURES = fileURLToPath(new URL('./fixtures/gh-queries/', import.meta.url));

describe("gh's captured queries", () => {
  it('are what the installed gh sends today, request for request (the GraphQL schema is tested against them)', async () => {
    requireGh();
    const dir = mkdtempSync(join(tmpdir(), 'forgesync-gh-queries-'));
    try {
      expect(await captureGhQueries(dir)).toEqual([]);
      const files = readdirSync(dir).sort();
      expect(files).toEqual(readdirSync(FIXTURES).filter((file) => file !== 'README.md').sort());
      for (const file of files) expect(readFileSync(join(dir, file), 'utf8'), file).toBe(readFileSync(join(FIXTURES, file), 'utf8'));
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 180_000);
});

describe('the gh CLI against the copy', () => {
  let pair: FakeAndCopy;
  let copyFront: GhFront;
  let fakeFront: GhFront;
  let copy: GhTarget;
  let fake: GhTarget;
  let commands: Record<string, GhCommand>;

  beforeAll(async () => {
    requireGh();
    const { project, subjects } = ghProject();
    commands = ghCommands(subjects);
    pair = await importFakeToCopy({ project });
    copyFront = await startGhFront({ restBase: pair.copyBase, graphqlUrl: `${pair.copyBase}/api/graphql` });
    fakeFront = await startGhFront({ restBase: pair.harness.fake.apiUrl });
    copy = { host: copyFront.host, token: pair.readToken, caFile: copyFront.caFile };
    fake = { host: fakeFront.host, token: pair.harness.token, caFile: fakeFront.caFile };
  }, 120_000);

  afterAll(async () => {
    await copyFront?.close();
    await fakeFront?.close();
    await pair?.close();
  });

  const records = () => pair.harness.fake.project;
  const issuesOnly = () => records().issues.filter((issue) => issue.pull === null);
  const byNumber = (a: { number: number }, b: { number: number }) => a.number - b.number;

  /** Runs the command `slug` of gh-commands.ts against the copy; fails with what gh printed unless it exits 0. */
  async function ghOnCopy(slug: string): Promise<string> {
    const command = commands[slug];
    if (command === undefined) throw new Error(`no gh command ${slug}`);
    const run = await runGh(argsFor(command, ghRepo(copy, pair.project)), copy);
    return succeeded(run, `gh ${command.args.join(' ')}`);
  }

  function succeeded(run: GhRun, what: string): string {
    if (run.code !== 0) throw new Error(`${what} exited ${run.code}: ${run.stderr.trim() || run.stdout.trim()}`);
    return run.stdout;
  }

  async function jsonOnCopy(slug: string): Promise<unknown> {
    return JSON.parse(await ghOnCopy(slug)) as unknown;
  }

  const issueList = async (slug: string) => ((await jsonOnCopy(slug)) as unknown[]).map(issueFromGh);
  const pullList = async (slug: string) => ((await jsonOnCopy(slug)) as unknown[]).map(pullFromGh);
  const expectIssues = (list: IssueRecord[]) => list.map((issue) => expectedIssue(pair.harness.fake, issue));
  const expectPulls = (list: IssueRecord[]) => list.map((issue) => expectedPull(pair.harness.fake, issue));
  const newestFirst = (list: IssueRecord[]) => [...list].sort((a, b) => b.createdAt - a.createdAt);

  describe('REST through /api/v3', () => {
    it('gh api --paginate lists the same issues, page after page, from the copy as from the fake', async () => {
      const path = `repos/${pair.project}/issues?state=all&per_page=7`;
      const args = ['api', '--paginate', path, '--jq', '.[]'];
      const lines = (text: string) => text.trim().split('\n').map((line) => JSON.parse(line) as unknown);
      const fromFake = lines(succeeded(await runGh(args, fake), 'gh api against the fake'));
      const fromCopy = lines(succeeded(await runGh(args, copy), 'gh api against the copy'));
      // Several pages, followed through the front's Link headers.
      expect(fromCopy.length).toBe(records().issues.length);
      expect(fromCopy.length).toBeGreaterThan(7);
      // The fake's API links point at the copy's base once moved there, as the copy's own do.
      const moved = JSON.parse(JSON.stringify(fromFake).split(pair.harness.fake.apiUrl).join(pair.copyBase)) as unknown;
      expect(fromCopy).toEqual(moved);
    });
  });

  describe('issues (GraphQL)', () => {
    it('gh issue list --state all --json …: every issue, newest first, field by field', async () => {
      expect(await issueList('issue-list-json')).toEqual(expectIssues(newestFirst(issuesOnly())));
    });

    it('gh issue list (plain): the open issues, one line each', async () => {
      const out = await ghOnCopy('issue-list');
      const open = newestFirst(issuesOnly().filter((issue) => issue.state === 'open')).slice(0, 30);
      expect(out.trim().split('\n').map((line) => line.split('\t').slice(0, 3))).toEqual(open.map((issue) => [String(issue.number), 'OPEN', issue.title]));
    });

    it('gh issue list --assignee x --author y: the issues of that author with that assignee', async () => {
      const wanted = issuesOnly().filter((issue) => issue.user === 'y' && issue.assignees.includes('x'));
      expect(wanted.length).toBeGreaterThan(1);
      expect(await issueList('issue-list-assignee-author')).toEqual(expectIssues(newestFirst(wanted)));
    });

    it('gh issue list --label bug (through search): the issues with the label', async () => {
      const wanted = issuesOnly().filter((issue) => issue.labels.includes('bug'));
      expect(wanted.length).toBeGreaterThan(1);
      expect((await issueList('issue-list-label')).sort(byNumber)).toEqual(expectIssues(wanted).sort(byNumber));
    });

    it('gh issue list --milestone 1: the milestone found by number, then its issues', async () => {
      const wanted = issuesOnly().filter((issue) => issue.milestone === 1);
      expect((await issueList('issue-list-milestone-number')).sort(byNumber)).toEqual(expectIssues(wanted).sort(byNumber));
    });

    it('gh issue list with label, assignee, author and milestone together: only the issue matching all', async () => {
      const wanted = issuesOnly().filter(
        (issue) => issue.labels.includes('bug') && issue.assignees.includes('x') && issue.user === 'y' && records().milestone(issue.milestone)?.title === 'v1',
      );
      expect(wanted).toHaveLength(1);
      expect(await issueList('issue-list-filtered')).toEqual(expectIssues(wanted));
    });

    it('gh issue list --search "crash in:title": the open issues with the word in their title, not in their body', async () => {
      const out = await ghOnCopy('issue-list-search');
      const wanted = issuesOnly().filter((issue) => issue.state === 'open' && /\bcrash\b/i.test(issue.title));
      expect(wanted.length).toBeGreaterThan(0);
      const numbers = out.trim().split('\n').map((line) => Number(line.split('\t')[0]));
      expect(numbers.sort((a, b) => a - b)).toEqual(wanted.map((issue) => issue.number).sort((a, b) => a - b));
    });

    it('gh issue view: title, state, author, labels, comment count, assignees, milestone and body', async () => {
      const issue = records().issue(Number(commands['issue-view']!.args[2]));
      const out = await ghOnCopy('issue-view');
      const expected = expectedIssue(pair.harness.fake, issue);
      expect(out).toContain(`title:\t${issue.title}\nstate:\tOPEN\nauthor:\ty\n`);
      expect(out).toContain(`comments:\t${expected.comments.length}\nassignees:\tx\n`);
      expect(out).toContain(`milestone:\tv1\nnumber:\t${issue.number}\n--\n${expected.body}\n`);
      expect(out).toMatch(/^labels:\tbug$/m);
    });

    it('gh issue view --comments: every comment, its author and body, in order', async () => {
      const out = await ghOnCopy('issue-view-comments');
      const issue = records().issue(Number(commands['issue-view-comments']!.args[2]));
      const comments = expectedIssue(pair.harness.fake, issue).comments;
      expect(comments.length).toBeGreaterThan(1);
      let from = 0;
      for (const comment of comments) {
        const at = out.indexOf(`author:\t${comment.author}\n`, from);
        expect(at, `comment by ${comment.author}`).toBeGreaterThanOrEqual(from);
        from = out.indexOf(`--\n${comment.body}\n--\n`, at);
        expect(from, comment.body).toBeGreaterThan(at);
      }
    });

    it('gh issue view --json …: the issue field by field', async () => {
      const issue = records().issue(Number(commands['issue-view-json']!.args[2]));
      expect(issueFromGh(await jsonOnCopy('issue-view-json'))).toEqual(expectedIssue(pair.harness.fake, issue));
    });
  });

  describe('pull requests (GraphQL)', () => {
    it('gh pr list --state all --json …: every pull request, newest first, with its reviews and comments', async () => {
      expect(await pullList('pr-list-json')).toEqual(expectPulls(newestFirst(records().pulls)));
    });

    it('gh pr list (plain): the open pull requests with their head branch', async () => {
      const out = await ghOnCopy('pr-list');
      const open = newestFirst(records().pulls.filter((issue) => issue.state === 'open'));
      const state = (issue: IssueRecord) => (issue.pull?.draft ? 'DRAFT' : 'OPEN');
      expect(out.trim().split('\n').map((line) => line.split('\t').slice(0, 4))).toEqual(open.map((issue) => [String(issue.number), issue.title, issue.pull!.headRef, state(issue)]));
    });

    it('gh pr list --base main --head b: the pull requests from that branch, open and closed', async () => {
      const wanted = records().pulls.filter((issue) => issue.pull?.headRef === 'b' && issue.pull.baseRef === 'main');
      expect(wanted).toHaveLength(2);
      expect(await pullList('pr-list-base-head')).toEqual(expectPulls(newestFirst(wanted)));
    });

    it('gh pr list --base main --head b --label l (through search): only the labelled one', async () => {
      const wanted = records().pulls.filter((issue) => issue.pull?.headRef === 'b' && issue.labels.includes('l'));
      expect(wanted).toHaveLength(1);
      expect(await pullList('pr-list-filtered')).toEqual(expectPulls(wanted));
    });

    it('gh pr view: title, state, author, labels, assignees, milestone, number, link and body', async () => {
      const issue = records().issue(Number(commands['pr-view']!.args[2]));
      const out = await ghOnCopy('pr-view');
      expect(out).toContain(`title:\t${issue.title}\nstate:\tOPEN\nauthor:\ty\nlabels:\tl\nassignees:\tx\n`);
      expect(out).toContain(`milestone:\tv1\nnumber:\t${issue.number}\nurl:\t${webPage(pair.harness.fake, issue)}\n`);
      expect(out).toContain(`additions:\t${issue.pull!.additions}\ndeletions:\t${issue.pull!.deletions}\n--\n${issue.body}\n`);
    });

    it('gh pr view --comments: the comments and the reviews with their verdicts', async () => {
      const out = await ghOnCopy('pr-view-comments');
      expect(out).toContain('author:\tx\nassociation:');
      expect(out).toContain('--\nLooks right to me.\n--\n');
      expect(out).toMatch(/status:\tchanges requested\n--\nPlease add a test\.\n--\n/);
      expect(out).toMatch(/status:\tapproved\n--\nThanks for the test\.\n--\n/);
    });

    it('gh pr view --json …: the pull request field by field, reviews and comments included', async () => {
      const issue = records().issue(Number(commands['pr-view-json']!.args[2]));
      const got = pullFromGh(await jsonOnCopy('pr-view-json'));
      expect(got.reviews.map((review) => review.state)).toEqual(['CHANGES_REQUESTED', 'APPROVED']);
      expect(got).toEqual(expectedPull(pair.harness.fake, issue));
    });

    it('gh pr view --json …: the global ids of the author, assignees, labels, comments and reviews are GitHub\'s node ids', async () => {
      const issue = records().issue(Number(commands['pr-view-json']!.args[2]));
      const got = (await jsonOnCopy('pr-view-json')) as {
        author: { id: string }; assignees: Array<{ id: string }>; labels: Array<{ id: string }>; comments: Array<{ id: string }>; reviews: Array<{ id: string }>;
      };
      const userId = (login: string) => nodeId('User', records().users.get(login)!.id);
      expect(got.author.id).toBe(userId(issue.user));
      expect(got.assignees.map((user) => user.id)).toEqual(issue.assignees.map(userId));
      expect(got.labels.map((label) => label.id)).toEqual(issue.labels.map((name) => nodeId('Label', records().label(name)!.id)));
      expect(got.comments.map((comment) => comment.id)).toEqual(records().commentsByIssue.get(issue.number)!.map((comment) => nodeId('IssueComment', comment.id)));
      expect(got.reviews.map((review) => review.id)).toEqual(records().reviewsByPull.get(issue.number)!.map((review) => nodeId('PullRequestReview', review.id)));
    });
  });

  describe('gh api graphql: queries of its users, and the ones GitHub refuses', () => {
    /** `gh api graphql -f query=…` against the copy (extra arguments after). */
    const graphql = (query: string, ...extra: string[]) => runGh(['api', 'graphql', '-f', `query=${query}`, ...extra], copy);
    const repository = () => {
      const { owner, name } = records().repo;
      return `repository(owner: "${owner}", name: "${name}")`;
    };

    it('--paginate follows pageInfo.endCursor through every issue, oldest first', async () => {
      const query = `query($endCursor: String) { ${repository()} { issues(first: 5, after: $endCursor, states: [OPEN, CLOSED]) { nodes { number } pageInfo { hasNextPage endCursor } } } }`;
      const out = succeeded(await graphql(query, '--paginate', '--jq', '.data.repository.issues.nodes[].number'), 'gh api graphql --paginate');
      expect(out.trim().split('\n').map(Number)).toEqual(issuesOnly().map((issue) => issue.number));
    });

    it('an unknown field, a malformed query, too large a page and a missing repository get GitHub\'s errors, which gh prints', async () => {
      const { owner } = records().repo;
      const cases = [
        { query: `{ ${repository()} { nope } }`, message: "Field 'nope' doesn't exist on type 'Repository'" },
        { query: `{ ${repository()} { issues(first: 5 `, message: 'Parse error on "EOF"' },
        { query: `{ ${repository()} { issues(first: 500) { nodes { number } } } }`, message: 'Requesting 500 records on the `issues` connection exceeds the `first` limit of 100 records.' },
        { query: `{ repository(owner: "${owner}", name: "nothere") { name } }`, message: `Could not resolve to a Repository with the name '${owner}/nothere'.` },
      ];
      for (const { query, message } of cases) {
        const run = await graphql(query);
        expect(run.code, query).toBe(1);
        expect(run.stderr, query).toContain(message);
      }
    });

    it('gh issue view of a number nothing has: GitHub\'s "Could not resolve" through gh', async () => {
      const run = await runGh(['issue', 'view', '9999', '-R', ghRepo(copy, pair.project)], copy);
      expect(run.code).toBe(1);
      expect(run.stderr).toContain('Could not resolve to an issue or pull request with the number of 9999.');
    });
  });

  describe('releases and labels (GraphQL, then REST for a release)', () => {
    it('gh release list: every release, newest first, with its badge, tag and date', async () => {
      const out = await ghOnCopy('release-list');
      expect(out.trim().split('\n')).toEqual(expectedReleaseLines(records().releases));
    });

    it('gh release view: name, tag, author, dates, link, assets and notes', async () => {
      const tag = commands['release-view']!.args[2]!;
      const release = records().releases.find((candidate) => candidate.tag === tag)!;
      const out = await ghOnCopy('release-view');
      expect(out).toContain(`title:\t${release.name}\ntag:\t${release.tag}\ndraft:\tfalse\nprerelease:\t${release.prerelease}\nauthor:\t${release.author}\n`);
      expect(out).toContain(`created:\t${githubTime(release.createdAt)}\npublished:\t${githubTime(release.publishedAt!)}\n`);
      for (const asset of release.assets) expect(out).toContain(`asset:\t${asset.name}\n`);
      expect(out).toContain(`--\n${release.body}`);
    });

    it('gh release view --json …: the release field by field', async () => {
      const tag = commands['release-view-json']!.args[2]!;
      const release = records().releases.find((candidate) => candidate.tag === tag)!;
      const got = (await jsonOnCopy('release-view-json')) as Record<string, unknown>;
      const { owner, name } = records().repo;
      expect(got).toEqual({
        tagName: release.tag, name: release.name, body: release.body, isDraft: release.draft, isPrerelease: release.prerelease,
        createdAt: githubTime(release.createdAt), publishedAt: githubTime(release.publishedAt!), author: expect.objectContaining({ login: release.author }),
        url: `${pair.harness.fake.webUrl}/${owner}/${name}/releases/tag/${release.tag}`,
      });
    });

    it('gh label list (plain and --json): every label in the order made, with colour and description', async () => {
      const labels = records().labels;
      const json = (await jsonOnCopy('label-list-json')) as Array<{ name: string; color: string; description: string }>;
      expect(json).toEqual(labels.map((label) => ({ name: label.name, color: label.color, description: label.description ?? '' })));
      const plain = await ghOnCopy('label-list');
      expect(plain.trim().split('\n')).toEqual(labels.map((label) => `${label.name}\t${label.description ?? ''}\t#${label.color}`));
    });

    it('gh repo view: the name and description', async () => {
      const out = await ghOnCopy('repo-view');
      expect(out).toContain(`name:\t${pair.project}\ndescription:\t${records().repo.description ?? ''}\n`);
    });
  });
});
