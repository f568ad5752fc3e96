import type { ImportRecord } from '../store/imports.js';
import type { SourceStatus } from '../status.js';
import { ConflictError } from '../../errors.js';

/** What the importer needs of the replication module for an import's git sources. */
export interface GitSourceOptions {
  /** The source named `name`, or undefined. */
  find(name: string): Promise<{ name: string; url: string } | undefined>;
  add(input: { name: string; url: string; credential: string | null }): Promise<void>;
  /** Records a sync request (a new URL replaces the old one first). */
  requestSync(name: string, url: string): Promise<void>;
  /** Syncs the source here or waits for the process that does; never throws for a failed sync. */
  sync(name: string): Promise<void>;
  status(name: string): Promise<SourceStatus | null>;
  /** Copies the source's bare mirror to `dest` (under its lease); false when it has none yet. */
  copyMirror(name: string, dest: string): Promise<boolean>;
}

/** A source name is taken by a mirror of something else. */
export class SourceNameTakenError extends ConflictError {
  constructor(readonly sourceName: string, readonly url: string) {
    super(`source ${sourceName} already mirrors ${url}; rename the import (--name) or remove that source`);
  }
}

/**
 * The repository and the wiki of an import as replication sources
 * `<name>` and `<name>.wiki` (so `refs/pull/*` come along with the mirror):
 * added on the first run, synced on each.
 */
export class GitSources {
  /** Syncs started early, by source name (a process that runs no jobs fetches git while the API is walked). */
  readonly #running = new Map<string, Promise<void>>();

  constructor(
    private readonly options: GitSourceOptions,
    /** Whether credential `credential` may go to `url`'s host. */
    private readonly bound: (names: { credential: string; url: string }) => Promise<boolean>,
    /** Whether this process runs jobs: if not, nobody else may sync the sources, so they are synced here at once. */
    private readonly runsJobs: () => boolean,
  ) {}

  async ensure(record: ImportRecord, repository: { clone_url?: unknown; has_wiki?: unknown } | undefined): Promise<{ repository: string | null; wiki: string | null }> {
    const cloneUrl = typeof repository?.clone_url === 'string' ? repository.clone_url : null;
    if (!cloneUrl) return { repository: record.repositorySource, wiki: record.wikiSource };
    const wikiUrl = repository?.has_wiki === true ? cloneUrl.replace(/(\.git)?$/, '.wiki.git') : null;
    const repositorySource = await this.#one(record, record.name, cloneUrl, record.repositorySource);
    const wikiSource = wikiUrl ? await this.#one(record, `${record.name}.wiki`, wikiUrl, record.wikiSource) : null;
    return { repository: repositorySource, wiki: wikiSource };
  }

  async wait(record: ImportRecord): Promise<void> {
    for (const name of [record.repositorySource, record.wikiSource]) {
      if (!name) continue;
      const early = this.#running.get(name);
      this.#running.delete(name);
      await (early ?? this.options.sync(name));
    }
  }

  /** Starts syncing `name` here (in the background) when no worker would. */
  #startEarly(name: string): void {
    if (this.runsJobs() || this.#running.has(name)) return;
    this.#running.set(name, this.options.sync(name));
  }

  async #one(record: ImportRecord, name: string, url: string, ours: string | null): Promise<string> {
    const existing = await this.options.find(name);
    if (!existing) {
      let credential: string | null = null;
      for (const candidate of record.credentials) {
        if (await this.bound({ credential: candidate, url })) {
          credential = candidate;
          break;
        }
      }
      await this.options.add({ name, url, credential });
      this.#startEarly(name);
      return name;
    }
    if (existing.url !== url && ours !== name) throw new SourceNameTakenError(name, existing.url);
    await this.options.requestSync(name, url);
    this.#startEarly(name);
    return name;
  }
}
