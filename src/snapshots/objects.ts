import { CatFile, type GitObject } from '../git/cat-file.js';
import type { GitRunner } from '../git/runner.js';

/**
 * Reads commits, trees and files of mirrors without materialising anything,
 * through one long-lived `git cat-file --batch-command` per mirror.
 */
export class ObjectReader {
  readonly #processes = new Map<string, CatFile>();

  constructor(
    private readonly runner: GitRunner,
    private readonly idleMs?: number,
  ) {}

  /** The commit a (validated) revision names in `gitDir`, or undefined. Tags are peeled. */
  async resolveCommit(gitDir: string, revision: string): Promise<string | undefined> {
    const object = await this.#catFile(gitDir).info(`${revision}^{commit}`);
    return object?.oid;
  }

  /** The object at `path` (validated, '' for the root tree) of commit `sha`, with its content; undefined when absent. */
  async read(gitDir: string, sha: string, path: string): Promise<GitObject | undefined> {
    return await this.#catFile(gitDir).contents(path === '' ? `${sha}^{tree}` : `${sha}:${path}`);
  }

  /** Stops the process of one mirror (it is being removed or replaced). */
  forget(gitDir: string): void {
    this.#processes.get(gitDir)?.close();
    this.#processes.delete(gitDir);
  }

  /** Stops every process. */
  close(): void {
    for (const catFile of this.#processes.values()) catFile.close();
    this.#processes.clear();
  }

  #catFile(gitDir: string): CatFile {
    let catFile = this.#processes.get(gitDir);
    if (!catFile) {
      catFile = new CatFile(this.runner, gitDir, this.idleMs);
      this.#processes.set(gitDir, catFile);
    }
    return catFile;
  }
}
