import type { FastifyRequest } from 'fastify';
import { inScope } from '../../../../server/auth.js';
import { findImport, repositoryData, type ImportRef } from '../../../store/read-api.js';
import { importNames, importsByIds, objectsByNumbers, profilesByLogin } from '../../../store/graphql-reads.js';
import { listMemo, writeStamp } from '../../../store/list-memo.js';
import { copyOrigin, RepoContext, type RouteDeps } from '../context.js';
import { BatchLoader } from './batch.js';

/*
 * What the resolvers of one GraphQL request read through: the imports the
 * reader may see (as the REST routes' repoContext: a scoped reader's other
 * imports are unknown), each import's rendering of stored JSON (API links
 * and attachments pointed at the copy) and per-request batch loaders.
 */

export type Json = Record<string, any>;

/** The login the endpoint answers `viewer` with: the copy's readers are tokens, not GitHub users. */
export const VIEWER_LOGIN = 'forgesync-reader';

/** Node ids one request may look for by a scan of the stored JSON (those that do not decode to a database id). */
const NODE_SCANS_PER_REQUEST = 5;

/** One import, as the resolvers of one request read it. */
export class ImportScope {
  #repository: Promise<Json | undefined> | undefined;
  readonly #pulls: BatchLoader<number, string>;
  readonly #issueShapes: BatchLoader<number, string>;
  readonly #profiles: BatchLoader<string, string>;

  constructor(
    readonly request: RequestScope,
    readonly imported: ImportRef,
    private readonly rendering: RepoContext,
    /** The import's write stamp (list-memo.ts), read before any of its data: what its remembered counts and answers are valid under. */
    readonly stamp: string,
  ) {
    const database = request.deps.database;
    this.#pulls = new BatchLoader((numbers) => objectsByNumbers(database, imported.id, ['pull_request'], numbers));
    this.#issueShapes = new BatchLoader((numbers) => objectsByNumbers(database, imported.id, ['issue', 'pull_request_issue'], numbers));
    this.#profiles = new BatchLoader((logins) => profilesByLogin(database, imported.apiUrl, logins));
  }

  get database() {
    return this.request.deps.database;
  }

  /** Stored JSON text as answered: parsed, API links and attachment URLs pointed at the copy. */
  render(data: string): Json {
    return this.rendering.render(data);
  }

  /** The stored repository (`GET /repos/{o}/{r}`), rendered; undefined before it was fetched. */
  repository(): Promise<Json | undefined> {
    this.#repository ??= repositoryData(this.database, this.imported.id).then((data) => (data === undefined ? undefined : this.render(data)));
    return this.#repository;
  }

  /**
   * How many objects a connection holds (`totalCount`, `issueCount`):
   * remembered per list as the REST lists remember their totals
   * (list-memo.ts), until the import writes again, so only the first
   * request after a write counts (a count walks every entry of the list,
   * and reads every row when a filter needs the row's type or JSON).
   * Inputs: the list's key (everything its count depends on) and how to
   * count it.
   */
  async total(listKey: string, count: () => Promise<number>): Promise<number> {
    const memo = listMemo(this.database, this.imported.id, `graphql ${listKey}`, this.stamp);
    memo.total ??= await count();
    return memo.total;
  }

  /** Pull request `number`'s stored `/pulls` item, rendered (batched with the other pull requests of the page). */
  async pull(number: number): Promise<Json | undefined> {
    const data = await this.#pulls.load(number);
    return data === undefined ? undefined : this.render(data);
  }

  /** The issue shape of issue or pull request `number` (reactions, a pull request's assignees), rendered. */
  async issueShape(number: number): Promise<Json | undefined> {
    const data = await this.#issueShapes.load(number);
    return data === undefined ? undefined : this.render(data);
  }

  /** The stored profile of `login` from this import's API host (its `name`, `email`…), if fetched. */
  async profile(login: string): Promise<Json | undefined> {
    // Profiles are kept per API host, outside the import's write stamp: an answer with one is not remembered.
    this.request.readsBeyondImports();
    const data = await this.#profiles.load(login.toLowerCase());
    return data === undefined ? undefined : (JSON.parse(data) as Json);
  }
}

/** One GraphQL request: the reader's scope and the imports read so far. */
export class RequestScope {
  readonly #byId = new Map<number, Promise<ImportScope | undefined>>();
  readonly #byName = new Map<string, Promise<ImportScope | undefined>>();
  #visible: Promise<number[]> | undefined;
  #scansLeft = NODE_SCANS_PER_REQUEST;
  /** The imports read, with their write stamps: what a remembered answer is valid under (answers.ts). */
  readonly #read: ImportScope[] = [];
  /** Whether the answer may be remembered: a reader who sees every import, and nothing read but imports' objects. */
  #rememberable: boolean;

  constructor(
    readonly deps: RouteDeps,
    readonly request: FastifyRequest,
    /** The plugin's prefix (`/github`): where rewritten links point, below the copy's base. */
    readonly prefix: string,
  ) {
    this.#rememberable = request.access?.sees === undefined;
  }

  /** The base the answer's links point at (scheme, host or FORGESYNC_PUBLIC_URL, prefix): part of a remembered answer's key. */
  get base(): string {
    return `${copyOrigin(this.deps, this.request)}${this.prefix}`;
  }

  /** Whether the answer may be remembered (answers.ts): readers of every import, nothing read beyond imports' objects. */
  get rememberable(): boolean {
    return this.#rememberable;
  }

  /** The request reads what no import's write stamp covers (node ids across imports, user profiles, the clock): its answer is not remembered. */
  readsBeyondImports(): void {
    this.#rememberable = false;
  }

  /** Each import read so far, with the write stamp read before its data. */
  importStamps(): { id: number; stamp: string }[] {
    return this.#read.map((scope) => ({ id: scope.imported.id, stamp: scope.stamp }));
  }

  /** Whether the reader may see the import named `name` (every name, but for a scoped reader). */
  sees(name: string): boolean {
    return inScope(this.request, name);
  }

  async #scopeOf(imported: ImportRef): Promise<ImportScope> {
    const rewriter = await this.deps.links.forImport(imported.id, imported.name);
    const rendering = new RepoContext(imported, copyOrigin(this.deps, this.request), this.prefix, rewriter);
    const scope = new ImportScope(this, imported, rendering, await writeStamp(this.deps.database, imported.id));
    this.#read.push(scope);
    return scope;
  }

  /** The import `owner/name` names, as `/repos/{owner}/{repo}` finds it; undefined when there is none the reader sees. */
  repository(owner: string, name: string): Promise<ImportScope | undefined> {
    const key = `${owner.toLowerCase()}/${name.toLowerCase()}`;
    let found = this.#byName.get(key);
    if (!found) {
      found = findImport(this.deps.database, owner, name, (importName) => this.sees(importName)).then((imported) => (imported ? this.#scopeOf(imported) : undefined));
      this.#byName.set(key, found);
    }
    return found;
  }

  /** Import `id` when the reader sees it (a node id's object lives there). */
  byId(id: number): Promise<ImportScope | undefined> {
    let found = this.#byId.get(id);
    if (!found) {
      found = importsByIds(this.deps.database, [id]).then((rows) => {
        const row = rows[0];
        return row && this.sees(row.name) ? this.#scopeOf(row) : undefined;
      });
      this.#byId.set(id, found);
    }
    return found;
  }

  /** Whether one more node id may be looked for by scanning stored JSON (a few per request: `nodes(ids:)` takes 100). */
  takeNodeScan(): boolean {
    if (this.#scansLeft <= 0) return false;
    this.#scansLeft--;
    return true;
  }

  /** The ids of every import the reader sees: where a node id is looked up. */
  visibleImportIds(): Promise<number[]> {
    this.#visible ??= importNames(this.deps.database).then((rows) => rows.filter((row) => this.sees(row.name)).map((row) => row.id));
    return this.#visible;
  }
}
