import { CatFiles, type GitObject } from '../git/cat-file.js';
import type { GitRunner } from '../git/runner.js';

/**
 * Reads commits, trees and files of mirrors without materialising anything,
 * through one long-lived `git cat-file --batch-command` per mirror.
 */
export class ObjectReader {
  readonly #catFiles: CatFiles;

  constructor(runner: GitRunner, idleMs?: number) {
    this.#catFiles = new CatFiles(runner, idleMs);
  }

  /** The commit a (validated) revision names in `gitDir`, or undefined. Tags are peeled. */
  async resolveCommit(gitDir: string, revision: string): Promise<string | undefined> {
    const object = await this.#catFiles.of(gitDir).info(`${revision}^{commit}`);
    return object?.oid;
  }

  /** The object at `path` (validated, '' for the root tree) of commit `sha`, with its content; undefined when absent. */
  async read(gitDir: string, sha: string, path: string): Promise<GitObject | undefined> {
    return await this.#catFiles.of(gitDir).contents(path === '' ? `${sha}^{tree}` : `${sha}:${path}`);
  }

  /** Stops the process of one mirror (it is being removed or replaced). */
  forget(gitDir: string): void {
    this.#catFiles.forget(gitDir);
  }

  /** Stops every process. */
  close(): void {
    this.#catFiles.close();
  }
}
