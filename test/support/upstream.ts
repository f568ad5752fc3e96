import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { git } from './git-fixtures.js';

/**
 * An upstream repository for tests: a bare repo (`bare`, what forgesync
 * mirrors) and a work tree that pushes every change to it at once (the git
 * fixtures' Upstream instead collects changes and publishes them together).
 */
export class Upstream {
  private counter = 0;

  private constructor(readonly bare: string, readonly work: string) {}

  /** A bare upstream with one commit on `main`. */
  static create(root = mkdtempSync(join(tmpdir(), 'forgesync-upstream-')), name = 'upstream.git'): Upstream {
    const bare = join(root, name);
    const work = mkdtempSync(join(tmpdir(), 'forgesync-work-'));
    git(root, 'init', '--quiet', '--bare', '--initial-branch=main', bare);
    git(work, 'init', '--quiet', '--initial-branch=main');
    git(work, 'remote', 'add', 'origin', bare);
    const upstream = new Upstream(bare, work);
    upstream.commit();
    return upstream;
  }

  /** Adds a commit on `branch` (created from HEAD if new) and pushes it; returns its sha. */
  commit(branch = 'main', files = 1): string {
    this.checkout(branch);
    for (let i = 0; i < files; i++) writeFileSync(join(this.work, `file-${this.counter}-${i}.txt`), `${branch} ${this.counter} ${i}\n`);
    git(this.work, 'add', '-A');
    git(this.work, 'commit', '--quiet', '-m', `commit ${++this.counter} on ${branch}`);
    git(this.work, 'push', '--quiet', 'origin', `${branch}:refs/heads/${branch}`);
    return git(this.work, 'rev-parse', 'HEAD');
  }

  deleteBranch(branch: string): void {
    git(this.work, 'push', '--quiet', 'origin', `:refs/heads/${branch}`);
  }

  tag(name: string, ref = 'HEAD', annotated = true): void {
    if (annotated) git(this.work, 'tag', '-a', '-m', name, name, ref);
    else git(this.work, 'tag', name, ref);
    git(this.work, 'push', '--quiet', 'origin', `refs/tags/${name}`);
  }

  deleteTag(name: string): void {
    git(this.work, 'push', '--quiet', 'origin', `:refs/tags/${name}`);
  }

  /** Rewrites the last commit of `branch` and force-pushes it. */
  forcePush(branch = 'main'): string {
    this.checkout(branch);
    writeFileSync(join(this.work, 'rewritten.txt'), `rewritten ${++this.counter}\n`);
    git(this.work, 'add', '-A');
    git(this.work, 'commit', '--quiet', '--amend', '-m', `rewritten ${this.counter}`);
    git(this.work, 'push', '--quiet', '--force', 'origin', `${branch}:refs/heads/${branch}`);
    return git(this.work, 'rev-parse', 'HEAD');
  }

  /** Points the upstream's HEAD at another branch. */
  setHead(branch: string): void {
    git(this.bare, 'symbolic-ref', 'HEAD', `refs/heads/${branch}`);
  }

  private checkout(branch: string): void {
    const exists = git(this.work, 'branch', '--list', branch) !== '';
    if (exists) git(this.work, 'checkout', '--quiet', branch);
    else git(this.work, 'checkout', '--quiet', '-b', branch);
  }
}
