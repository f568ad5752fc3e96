import { allObjects, objectByNumber } from '../../../../store/read-api.js';
import { emptyConnection, listConnection, type PageArgs } from '../connection.js';
import type { ImportScope, Json } from '../context.js';
import { githubError } from '../errors.js';
import { issueConnection, pullRequestConnection, type IssueListArgs, type PullListArgs } from '../lists.js';
import { OrganizationModel, UserModel, userOf } from './actor.js';
import { IssueModel } from './issue.js';
import { LabelModel, MilestoneModel, pathOf, ReleaseModel } from './project-data.js';
import { PullRequestModel } from './pull-request.js';
import { repositorySettings } from './repository-settings.js';

/*
 * A repository, from the stored `GET /repos/{o}/{r}` JSON, with the
 * import's project data below it. A repository the copy did not import
 * (a fork a pull request comes from, a parent) has no scope: its fields
 * answer from the embedded JSON and its lists are empty.
 */

type Order = { field: string; direction: 'ASC' | 'DESC' } | null | undefined;

function compareBy<T>(key: (item: T) => string | number | null, direction: 'ASC' | 'DESC') {
  const sign = direction === 'DESC' ? -1 : 1;
  return (a: T, b: T) => {
    const [x, y] = [key(a), key(b)];
    if (x === y) return 0;
    if (x === null) return 1; // nulls last, in either direction
    if (y === null) return -1;
    return (x < y ? -1 : 1) * sign;
  };
}

export class RepositoryModel {
  readonly __typename = 'Repository';
  #releases: Promise<ReleaseModel[]> | undefined;

  constructor(
    readonly json: Json,
    private readonly scope: ImportScope | null,
  ) {
    Object.assign(this, repositorySettings(json));
  }

  get id(): string {
    return String(this.json.node_id ?? '');
  }

  owner() {
    const owner = (this.json.owner ?? {}) as Json;
    return owner.type === 'Organization' ? new OrganizationModel(owner, this.scope) : new UserModel(owner, this.scope);
  }

  get resourcePath(): string {
    return pathOf(this.json.html_url);
  }

  watchers(args: PageArgs) {
    return listConnection([], args, () => Number(this.json.subscribers_count ?? this.json.watchers_count ?? 0));
  }

  async #collaborators(query: string | null | undefined): Promise<UserModel[]> {
    if (!this.scope) return [];
    const users = (await allObjects(this.scope.database, this.scope.imported.id, { types: ['collaborator'] })).map((data) => this.scope!.render(data));
    const needle = query?.toLowerCase();
    return users.filter((user) => !needle || String(user.login).toLowerCase().includes(needle)).map((user) => userOf(user, this.scope)!);
  }

  async assignableUsers(args: PageArgs & { query?: string | null }) {
    return listConnection(await this.#collaborators(args.query), args);
  }

  async mentionableUsers(args: PageArgs & { query?: string | null }) {
    return listConnection(await this.#collaborators(args.query), args);
  }

  projects() {
    return emptyConnection();
  }

  async #objects(type: 'label' | 'milestone' | 'release'): Promise<Json[]> {
    if (!this.scope) return [];
    return (await allObjects(this.scope.database, this.scope.imported.id, { types: [type] })).map((data) => this.scope!.render(data));
  }

  /** Labels by name or creation (id order), filtered by `query` on name and description as GitHub does. */
  async labels(args: PageArgs & { orderBy?: Order; query?: string | null }) {
    const needle = args.query?.toLowerCase();
    const labels = (await this.#objects('label'))
      .filter((label) => !needle || `${label.name}\n${label.description ?? ''}`.toLowerCase().includes(needle))
      .map((label) => new LabelModel(label, String(this.json.html_url ?? '')));
    const order = args.orderBy ?? { field: 'CREATED_AT', direction: 'ASC' };
    if (order.field === 'NAME') labels.sort(compareBy((label) => label.name.toLowerCase(), order.direction));
    else if (order.direction === 'DESC') labels.reverse();
    return listConnection(labels, args);
  }

  async label(args: { name: string }) {
    const name = args.name.toLowerCase();
    const found = (await this.#objects('label')).find((label) => String(label.name).toLowerCase() === name);
    return found ? new LabelModel(found, String(this.json.html_url ?? '')) : null;
  }

  async milestones(args: PageArgs & { states?: string[] | null; orderBy?: Order; query?: string | null }) {
    const states = args.states ? new Set(args.states.map((state) => state.toLowerCase())) : undefined;
    const needle = args.query?.toLowerCase();
    const milestones = (await this.#objects('milestone'))
      .filter((m) => (!states || states.has(String(m.state))) && (!needle || String(m.title).toLowerCase().includes(needle)))
      .map((m) => new MilestoneModel(m, this.scope!));
    const order = args.orderBy ?? { field: 'NUMBER', direction: 'ASC' };
    const keys: Record<string, (m: MilestoneModel) => string | number | null> = {
      DUE_DATE: (m) => m.dueOn,
      CREATED_AT: (m) => m.createdAt,
      UPDATED_AT: (m) => m.updatedAt,
      NUMBER: (m) => m.number,
    };
    milestones.sort(compareBy(keys[order.field] ?? keys.NUMBER!, order.direction));
    return listConnection(milestones, args);
  }

  async milestone(args: { number: number }) {
    if (!this.scope) return null;
    const data = await objectByNumber(this.scope.database, this.scope.imported.id, ['milestone'], args.number);
    return data === undefined ? null : new MilestoneModel(this.scope.render(data), this.scope);
  }

  /** Every release, newest first, each knowing whether it is the latest (the newest published, non-draft, non-prerelease). */
  #allReleases(): Promise<ReleaseModel[]> {
    this.#releases ??= this.#objects('release').then((releases) => {
      const newest = [...releases].sort(compareBy((r) => String(r.created_at ?? ''), 'DESC'));
      const latest = newest.find((r) => r.draft !== true && r.prerelease !== true);
      return newest.map((r) => new ReleaseModel(r, this.scope!, typeof latest?.id === 'number' ? latest.id : null));
    });
    return this.#releases;
  }

  async releases(args: PageArgs & { orderBy?: Order }) {
    const releases = [...(await this.#allReleases())];
    const order = args.orderBy ?? { field: 'CREATED_AT', direction: 'DESC' };
    releases.sort(order.field === 'NAME' ? compareBy((r) => r.name ?? r.tagName, order.direction) : compareBy((r) => r.createdAt, order.direction));
    return listConnection(releases, args);
  }

  async release(args: { tagName: string }) {
    return (await this.#allReleases()).find((release) => release.tagName === args.tagName) ?? null;
  }

  async latestRelease() {
    return (await this.#allReleases()).find((release) => release.isLatest) ?? null;
  }

  issues(args: IssueListArgs) {
    return this.scope ? issueConnection(this.scope, args) : emptyConnection();
  }

  pullRequests(args: PullListArgs) {
    return this.scope ? pullRequestConnection(this.scope, args) : emptyConnection();
  }

  async #byNumber(kind: 'issue' | 'pull_request', number: number): Promise<IssueModel | PullRequestModel | null> {
    if (!this.scope) return null;
    const data = await objectByNumber(this.scope.database, this.scope.imported.id, [kind], number);
    if (data === undefined) return null;
    return kind === 'issue' ? new IssueModel(this.scope.render(data), this.scope) : new PullRequestModel(this.scope.render(data), this.scope);
  }

  async issue(args: { number: number }) {
    const found = await this.#byNumber('issue', args.number);
    if (!found) throw githubError('NOT_FOUND', `Could not resolve to an Issue with the number of ${args.number}.`);
    return found;
  }

  async pullRequest(args: { number: number }) {
    const found = await this.#byNumber('pull_request', args.number);
    if (!found) throw githubError('NOT_FOUND', `Could not resolve to a PullRequest with the number of ${args.number}.`);
    return found;
  }

  async issueOrPullRequest(args: { number: number }) {
    const found = (await this.#byNumber('issue', args.number)) ?? (await this.#byNumber('pull_request', args.number));
    if (!found) throw githubError('NOT_FOUND', `Could not resolve to an issue or pull request with the number of ${args.number}.`);
    return found;
  }
}
