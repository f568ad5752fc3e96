/**
 * Real bare repositories for the fake GitHub, written with `git fast-import`
 * from the project model: the main history (regular and merge commits), one
 * commit per pull request under `refs/pull/N/head` (plus its branch while it
 * exists), the protected/extra branches, a lightweight tag per release, and the
 * wiki (`<repo>.wiki.git`, branch master). Commit ids go back into
 * `project.shas`, so payloads name real commits.
 */
import { spawn } from 'node:child_process';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pullOf, type FakeProject, type GitCommit } from './project.js';

const SCRATCH = 'refs/fake-import/scratch';

const GIT_ENV: NodeJS.ProcessEnv = {
  PATH: process.env.PATH,
  HOME: '/nonexistent',
  GIT_CONFIG_NOSYSTEM: '1',
  GIT_CONFIG_GLOBAL: '/dev/null',
  LANG: 'C',
};

export function git(args: string[], options: { cwd?: string; input?: string } = {}): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn('git', args, { cwd: options.cwd, env: GIT_ENV, stdio: ['pipe', 'pipe', 'pipe'] });
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    child.stdout.on('data', (chunk: Buffer) => out.push(chunk));
    child.stderr.on('data', (chunk: Buffer) => err.push(chunk));
    child.on('error', reject);
    child.on('close', (code) => {
      if (code === 0) resolve(Buffer.concat(out).toString('utf8'));
      else reject(new Error(`git ${args.join(' ')} exited ${code}: ${Buffer.concat(err).toString('utf8').trim()}`));
    });
    child.stdin.on('error', () => undefined);
    child.stdin.end(options.input ?? '');
  });
}

/** The file a pull request's commit adds (sharded: one directory per 100 numbers keeps trees small). */
function pullFile(project: FakeProject, number: number): { path: string; content: string } {
  const issue = project.issue(number);
  return { path: `changes/${Math.floor(number / 100)}/pr-${number}.txt`, content: `${issue.title}\n${'+'.repeat(Math.min(pullOf(issue).additions, 80))}\n` };
}

/** Builds a fast-import stream; marks are allocated per sha key. */
class Stream {
  private readonly parts: string[] = [];
  private nextMark = 1;
  readonly marks = new Map<string, number>();

  constructor(private readonly email: (login: string) => string) {}

  private data(text: string): void {
    this.parts.push(`data ${Buffer.byteLength(text)}\n${text}\n`);
  }

  commit(ref: string, commit: GitCommit, parents: string[]): number {
    const mark = this.nextMark++;
    this.marks.set(commit.key, mark);
    const who = `${commit.author} <${this.email(commit.author)}> ${Math.floor(commit.at / 1000)} +0000`;
    this.parts.push(`commit ${ref}\nmark :${mark}\nauthor ${who}\ncommitter ${who}\n`);
    this.data(`${commit.message}\n`);
    parents.forEach((parent, index) => this.parts.push(`${index === 0 ? 'from' : 'merge'} ${parent}\n`));
    for (const file of commit.files) {
      this.parts.push(`M 100644 inline ${file.path}\n`);
      this.data(file.content);
    }
    this.parts.push('\n');
    return mark;
  }

  reset(ref: string, from: string): void {
    this.parts.push(`reset ${ref}\nfrom ${from}\n\n`);
  }

  text(): string {
    return this.parts.join('');
  }
}

export class GitRepos {
  readonly mainPath: string;
  readonly wikiPath: string;
  private queue: Promise<unknown> = Promise.resolve();

  private constructor(readonly root: string, private readonly project: FakeProject) {
    const { owner, name } = project.repo;
    this.mainPath = join(root, owner, `${name}.git`);
    this.wikiPath = join(root, owner, `${name}.wiki.git`);
  }

  static async create(project: FakeProject): Promise<GitRepos> {
    const root = await mkdtemp(join(tmpdir(), 'fake-github-git-'));
    const repos = new GitRepos(root, project);
    await mkdir(join(root, project.repo.owner), { recursive: true });
    await repos.buildMain();
    if (project.repo.hasWiki && project.wikiHistory.length > 0) await repos.buildWiki();
    return repos;
  }

  private email(login: string): string {
    const user = this.project.users.get(login);
    return `${user?.id ?? 0}+${login}@users.noreply.github.com`;
  }

  private async fastImport(path: string, stream: Stream): Promise<void> {
    const marksFile = join(this.root, `marks-${Date.now()}-${Math.random().toString(16).slice(2)}`);
    await git(['fast-import', '--quiet', `--export-marks=${marksFile}`], { cwd: path, input: stream.text() });
    const byMark = new Map<number, string>();
    for (const line of (await readFile(marksFile, 'utf8')).split('\n')) {
      const [mark, sha] = line.split(' ');
      if (mark && sha) byMark.set(Number(mark.slice(1)), sha);
    }
    await rm(marksFile, { force: true });
    for (const [key, mark] of stream.marks) {
      const sha = byMark.get(mark);
      if (sha) this.project.shas.set(key, sha);
    }
  }

  private async buildMain(): Promise<void> {
    const p = this.project;
    const branch = p.repo.defaultBranch;
    await git(['init', '--quiet', '--bare', `--initial-branch=${branch}`, this.mainPath]);
    const stream = new Stream((login) => this.email(login));
    const ref = (key: string) => `:${stream.marks.get(key)}`;
    // Each pull request's head commit is written right after its base commit, from the in-memory branch
    // (`from refs/heads/<main>`), onto one scratch ref; every other ref goes into packed-refs afterwards:
    // thousands of loose refs (a directory per refs/pull/N) take seconds to create on some file systems.
    const byBase = new Map<string, number[]>();
    for (const issue of p.pulls) {
      const list = byBase.get(pullOf(issue).baseKey) ?? [];
      list.push(issue.number);
      byBase.set(pullOf(issue).baseKey, list);
    }
    let previous: string | undefined;
    for (const commit of p.mainHistory) {
      if (commit.mergeOf !== undefined) {
        stream.commit(`refs/heads/${branch}`, { ...commit, files: [pullFile(p, commit.mergeOf)] }, [previous as string, ref(`pr:${commit.mergeOf}:head`)]);
      } else {
        stream.commit(`refs/heads/${branch}`, commit, previous === undefined ? [] : [previous]);
      }
      previous = ref(commit.key);
      for (const number of byBase.get(commit.key) ?? []) {
        const issue = p.issue(number);
        const head: GitCommit = { key: `pr:${number}:head`, message: issue.title, author: issue.user, at: issue.createdAt, files: [pullFile(p, number)] };
        stream.commit(SCRATCH, head, [`refs/heads/${branch}`]);
      }
    }
    await this.fastImport(this.mainPath, stream);
    const refs = new Map<string, string>();
    const sha = (key: string) => p.shas.get(key) as string;
    for (const issue of p.pulls) {
      refs.set(`refs/pull/${issue.number}/head`, sha(`pr:${issue.number}:head`));
      if (pullOf(issue).branchExists) refs.set(`refs/heads/${pullOf(issue).headRef}`, sha(`pr:${issue.number}:head`));
    }
    for (const b of p.branches) if (b.commit !== 'main' && b.name !== branch) refs.set(`refs/heads/${b.name}`, sha(b.commit));
    for (const release of p.releases) if (!release.draft) refs.set(`refs/tags/${release.tag}`, sha(release.commit));
    const lines = [...refs].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([name, id]) => `${id} ${name}\n`);
    await writeFile(join(this.mainPath, 'packed-refs'), `# pack-refs with: peeled fully-peeled sorted \n${lines.join('')}`);
    if (p.pulls.length > 0) await git(['update-ref', '-d', SCRATCH], { cwd: this.mainPath });
  }

  private async buildWiki(): Promise<void> {
    await git(['init', '--quiet', '--bare', '--initial-branch=master', this.wikiPath]);
    const stream = new Stream((login) => this.email(login));
    let previous: string | undefined;
    for (const commit of this.project.wikiHistory) {
      stream.commit('refs/heads/master', commit, previous === undefined ? [] : [previous]);
      previous = `:${stream.marks.get(commit.key)}`;
    }
    await this.fastImport(this.wikiPath, stream);
  }

  /** Writes an already recorded commit (the last of the main or wiki history) on top of the current tip. */
  async writeCommit(repo: 'main' | 'wiki', commit: GitCommit): Promise<string> {
    return this.serial(async () => {
      const path = repo === 'main' ? this.mainPath : this.wikiPath;
      const branch = repo === 'main' ? this.project.repo.defaultBranch : 'master';
      const history = repo === 'main' ? this.project.mainHistory : this.project.wikiHistory;
      const parent = history[history.indexOf(commit) - 1];
      const stream = new Stream((login) => this.email(login));
      const parents = parent ? [this.project.shaOf(parent.key)] : [];
      if (commit.mergeOf !== undefined) parents.push(this.project.shaOf(`pr:${commit.mergeOf}:head`));
      const files = commit.mergeOf !== undefined ? [pullFile(this.project, commit.mergeOf)] : commit.files;
      stream.commit(`refs/heads/${branch}`, { ...commit, files }, parents);
      await this.fastImport(path, stream);
      if (commit.mergeOf !== undefined) {
        const headRef = pullOf(this.project.issue(commit.mergeOf)).headRef;
        await git(['update-ref', '-d', `refs/heads/${headRef}`], { cwd: path }).catch(() => undefined);
      }
      return this.project.shaOf(commit.key);
    });
  }

  private serial<T>(task: () => Promise<T>): Promise<T> {
    const run = this.queue.then(task, task);
    this.queue = run.catch(() => undefined);
    return run;
  }

  async close(): Promise<void> {
    await this.queue;
    await rm(this.root, { recursive: true, force: true });
  }
}
