import { execFile, execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';

/** An environment for fixture git commands: no user config, fixed identity. */
export const FIXTURE_ENV: NodeJS.ProcessEnv = {
  PATH: process.env.PATH,
  HOME: '/nonexistent',
  LANG: 'C',
  GIT_CONFIG_NOSYSTEM: '1',
  GIT_CONFIG_GLOBAL: '/dev/null',
  GIT_TERMINAL_PROMPT: '0',
  GIT_AUTHOR_NAME: 'Fixture',
  GIT_AUTHOR_EMAIL: 'fixture@example.com',
  GIT_COMMITTER_NAME: 'Fixture',
  GIT_COMMITTER_EMAIL: 'fixture@example.com',
};

const runFile = promisify(execFile);

/** Runs the git CLI without blocking the event loop (for a test whose server, answering that git, runs in the same process). */
export async function gitAsync(cwd: string, ...args: string[]): Promise<string> {
  const { stdout } = await runFile('git', args, { cwd, env: FIXTURE_ENV, maxBuffer: 64 * 1024 * 1024 });
  return stdout.trim();
}

/** Runs plain git for test setup and returns its trimmed stdout. */
export function git(cwd: string, ...args: string[]): string {
  return execFileSync('git', args, { cwd, env: FIXTURE_ENV, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] }).trim();
}

const created: string[] = [];

/** A fresh temp directory, deleted by {@link removeTempDirs}. */
export function tempDir(prefix = 'forgesync-git-'): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  created.push(dir);
  return dir;
}

export function removeTempDirs(): void {
  for (const dir of created.splice(0)) rmSync(dir, { recursive: true, force: true });
}

/** Every ref of a repository as a Map, like `localRefs`. */
export function refsOf(repo: string): Map<string, string> {
  const out = git(repo, 'for-each-ref', '--format=%(objectname) %(refname)');
  return new Map(out.split('\n').filter(Boolean).map((line) => {
    const [sha, ref] = line.split(' ');
    return [ref as string, sha as string];
  }));
}

/** Every file under `dir`, recursively. */
export function listFiles(dir: string): string[] {
  const files: string[] = [];
  for (const entry of readdirSync(dir)) {
    const path = join(dir, entry);
    if (statSync(path).isDirectory()) files.push(...listFiles(path));
    else files.push(path);
  }
  return files;
}

/** True when any file under `dir` contains `needle` (binary-safe). */
export function anyFileContains(dir: string, needle: string): string | undefined {
  const bytes = Buffer.from(needle, 'utf8');
  return listFiles(dir).find((file) => readFileSync(file).includes(bytes));
}

/**
 * An upstream repository: a bare repo `<root>/<name>.git` (what mirrors clone) and a
 * private work tree whose every change is pushed with `git push --mirror` by {@link publish}.
 */
export class Upstream {
  private counter = 0;

  private constructor(readonly bare: string, readonly work: string) {}

  static create(root: string, name = 'upstream'): Upstream {
    const bare = join(root, `${name}.git`);
    const work = mkdtempSync(join(tmpdir(), 'forgesync-work-'));
    created.push(work);
    git(root, 'init', '-q', '--bare', '-b', 'main', bare);
    git(work, 'init', '-q', '-b', 'main');
    git(work, 'remote', 'add', '--mirror=push', 'origin', bare);
    const upstream = new Upstream(bare, work);
    upstream.commit('initial');
    upstream.publish();
    return upstream;
  }

  /** Commits a file change on `branch` (created from the current commit if new); returns the sha. */
  commit(message = `change ${++this.counter}`, branch?: string): string {
    if (branch) git(this.work, 'checkout', '-q', '-B', branch);
    writeFileSync(join(this.work, 'file.txt'), `${message}\n${Date.now()}-${Math.random()}\n`);
    git(this.work, 'add', 'file.txt');
    git(this.work, 'commit', '-q', '-m', message);
    return git(this.work, 'rev-parse', 'HEAD');
  }

  checkout(branch: string): void {
    git(this.work, 'checkout', '-q', branch);
  }

  branch(name: string, from = 'HEAD'): void {
    git(this.work, 'branch', '-f', name, from);
  }

  deleteBranch(name: string): void {
    git(this.work, 'branch', '-q', '-D', name);
  }

  tag(name: string, annotated = false): void {
    if (annotated) git(this.work, 'tag', '-a', '-m', `tag ${name}`, name);
    else git(this.work, 'tag', name);
  }

  deleteTag(name: string): void {
    git(this.work, 'tag', '-d', name);
  }

  /** Rewrites the current branch: drops its last commit and commits something else. */
  rewrite(): string {
    git(this.work, 'reset', '-q', '--hard', 'HEAD~1');
    return this.commit('rewritten history');
  }

  /** Pushes every ref of the work tree to the bare repo (force, with deletions). */
  publish(): void {
    git(this.work, 'push', '-q', '--mirror', 'origin');
  }

  /** Points the bare repo's HEAD at another branch. */
  setHead(branch: string): void {
    git(this.bare, 'symbolic-ref', 'HEAD', `refs/heads/${branch}`);
  }

  refs(): Map<string, string> {
    return refsOf(this.bare);
  }
}

/** Writes a lock file at `relative` inside `gitDir`, its mtime `ageMs` in the past: what a git killed mid-update leaves. */
export function plantLock(gitDir: string, relative: string, ageMs: number): string {
  const path = join(gitDir, relative);
  mkdirSync(join(path, '..'), { recursive: true });
  writeFileSync(path, '0000000000000000000000000000000000000000\n');
  const when = new Date(Date.now() - ageMs);
  utimesSync(path, when, when);
  return path;
}
