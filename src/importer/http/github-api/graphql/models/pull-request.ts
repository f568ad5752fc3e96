import { countSelection, keysetPage, objectsOfNumber, type StoredRow } from '../../../../store/graphql-reads.js';
import { keysetConnection, listConnection, type KeysetSource, type PageArgs } from '../connection.js';
import type { ImportScope, Json } from '../context.js';
import { OrganizationModel, UserModel, actorOf } from './actor.js';
import { CommitModel, PullRequestReviewModel, ReviewRequestModel } from './comments.js';
import { IssueLike } from './issue.js';
import { upper } from './project-data.js';
import { RepositoryModel } from './repository.js';

/*
 * Pull requests, from the stored `/pulls` item (completed by the single
 * object's fields where the import fetched it), their issue shape for
 * reactions, and their reviews and review requests.
 */

const MERGE_STATES = new Set(['DIRTY', 'UNKNOWN', 'BLOCKED', 'BEHIND', 'DRAFT', 'UNSTABLE', 'HAS_HOOKS', 'CLEAN']);

/** A branch as `headRef`/`baseRef` give it. */
class RefModel {
  readonly __typename = 'Ref';
  readonly prefix = 'refs/heads/';

  constructor(
    readonly name: string,
    private readonly commit: CommitModel,
  ) {}

  get id(): string {
    return `REF_${Buffer.from(this.name).toString('base64url')}`;
  }

  target(): CommitModel {
    return this.commit;
  }
}

/** A pull request's head or base as a repository owner (a User or an Organization: GitHub's RepositoryOwner). */
function ownerOf(json: unknown, scope: ImportScope): UserModel | OrganizationModel | null {
  if (json === null || typeof json !== 'object') return null;
  return (json as Json).type === 'Organization' ? new OrganizationModel(json as Json, scope) : new UserModel(json as Json, scope);
}

export class PullRequestModel extends IssueLike {
  readonly __typename = 'PullRequest';

  get #head(): Json {
    return (this.json.head ?? {}) as Json;
  }

  get #base(): Json {
    return (this.json.base ?? {}) as Json;
  }

  get merged(): boolean {
    return typeof this.json.merged_at === 'string';
  }

  get state(): string {
    return this.merged ? 'MERGED' : upper(this.json.state, 'OPEN');
  }

  get isDraft(): boolean {
    return this.json.draft === true;
  }

  get mergedAt(): string | null {
    return (this.json.merged_at as string | null | undefined) ?? null;
  }

  mergedBy() {
    return actorOf(this.json.merged_by, this.scope);
  }

  get mergeable(): string {
    return this.json.mergeable === true ? 'MERGEABLE' : this.json.mergeable === false ? 'CONFLICTING' : 'UNKNOWN';
  }

  get mergeStateStatus(): string {
    const state = upper(this.json.mergeable_state, 'UNKNOWN');
    return MERGE_STATES.has(state) ? state : 'UNKNOWN';
  }

  get maintainerCanModify(): boolean {
    return this.json.maintainer_can_modify === true;
  }

  get isCrossRepository(): boolean {
    const head = (this.#head.repo as Json | null | undefined)?.full_name;
    return head === undefined || head === null || head !== (this.#base.repo as Json | null | undefined)?.full_name;
  }

  get headRefName(): string {
    return String(this.#head.ref ?? '');
  }

  get headRefOid(): string {
    return String(this.#head.sha ?? '');
  }

  get baseRefName(): string {
    return String(this.#base.ref ?? '');
  }

  get baseRefOid(): string {
    return String(this.#base.sha ?? '');
  }

  async #repoHtml(): Promise<string> {
    return String((await this.scope.repository())?.html_url ?? '');
  }

  async #commit(oid: string): Promise<CommitModel> {
    return new CommitModel(oid, await this.#repoHtml(), this.updatedAt);
  }

  async headRef(): Promise<RefModel | null> {
    return this.#head.repo ? new RefModel(this.headRefName, await this.#commit(this.headRefOid)) : null;
  }

  async baseRef(): Promise<RefModel> {
    return new RefModel(this.baseRefName, await this.#commit(this.baseRefOid));
  }

  /** The head's repository: this import's when the branch is in it, else as embedded (with no project data). */
  headRepository(): RepositoryModel | null {
    const repo = this.#head.repo as Json | null | undefined;
    if (!repo) return null;
    return new RepositoryModel(repo, this.isCrossRepository ? null : this.scope);
  }

  headRepositoryOwner() {
    return ownerOf((this.#head.repo as Json | null | undefined)?.owner ?? this.#head.user, this.scope);
  }

  baseRepository() {
    return this.repository();
  }

  get additions(): number {
    return Number(this.json.additions ?? 0);
  }

  get deletions(): number {
    return Number(this.json.deletions ?? 0);
  }

  get changedFiles(): number {
    return Number(this.json.changed_files ?? 0);
  }

  async mergeCommit(): Promise<CommitModel | null> {
    return this.merged && typeof this.json.merge_commit_sha === 'string' ? this.#commit(this.json.merge_commit_sha) : null;
  }

  async potentialMergeCommit(): Promise<CommitModel | null> {
    return !this.merged && typeof this.json.merge_commit_sha === 'string' ? this.#commit(this.json.merge_commit_sha) : null;
  }

  /** The commits: the copy knows the head commit (counted as many as the single object says). */
  async commits(args: PageArgs) {
    const head = { __typename: 'PullRequestCommit', id: `PURC_${this.headRefOid}`, commit: await this.#commit(this.headRefOid), url: `${this.url}/commits/${this.headRefOid}` };
    return listConnection(this.headRefOid ? [head] : [], args, () => (typeof this.json.commits === 'number' ? this.json.commits : this.headRefOid ? 1 : 0));
  }

  files(args: PageArgs) {
    return listConnection([], args, () => this.changedFiles);
  }

  /** Reviews in the order they were submitted (id order), a keyset page at a time; `states` and `author` narrow them. */
  async reviews(args: PageArgs & { states?: string[] | null; author?: string | null }) {
    const { database, imported } = this.scope;
    const repoHtml = await this.#repoHtml();
    const selection = { types: ['pull_request_review'] as const, number: this.number };
    const states = args.states ? new Set(args.states) : undefined;
    const author = args.author?.toLowerCase();
    const filtering = states !== undefined || author !== undefined;
    const models = (rows: { data: string }[]) => rows.map((row) => new PullRequestReviewModel(this.scope.render(row.data), this.scope, repoHtml));
    const passes = (review: PullRequestReviewModel) => (!states || states.has(review.state)) && (!author || review.authorLogin.toLowerCase() === author);
    const source: KeysetSource<PullRequestReviewModel> = {
      read: (bounds) => keysetPage(database, imported.id, { ...selection, ...bounds, order: 'id', direction: 'asc' }),
      keep: filtering ? async (rows: StoredRow[]) => rows.filter((row) => passes(models([row])[0]!)) : undefined,
      nodes: async (rows) => models(rows),
      count: async () => (filtering ? (await this.#allReviews()).filter(passes).length : countSelection(database, imported.id, selection)),
    };
    return keysetConnection(source, args);
  }

  async #allReviews(): Promise<PullRequestReviewModel[]> {
    const repoHtml = await this.#repoHtml();
    const rows = await objectsOfNumber(this.scope.database, this.scope.imported.id, ['pull_request_review'], this.number);
    return rows
      .map((row) => new PullRequestReviewModel(this.scope.render(row.data), this.scope, repoHtml))
      .sort((a, b) => Number(a.databaseId ?? 0) - Number(b.databaseId ?? 0));
  }

  /** Each reviewer's latest submitted review (in submission order), optionally only approvals and change requests. */
  async #latest(opinionated: 'opinionated' | 'any'): Promise<PullRequestReviewModel[]> {
    const latest = new Map<string, PullRequestReviewModel>();
    for (const review of await this.#allReviews()) {
      if (review.state === 'PENDING') continue;
      if (opinionated === 'opinionated' && review.state !== 'APPROVED' && review.state !== 'CHANGES_REQUESTED') continue;
      latest.delete(review.authorLogin);
      latest.set(review.authorLogin, review);
    }
    return [...latest.values()];
  }

  async latestReviews(args: PageArgs) {
    return listConnection(await this.#latest('any'), args);
  }

  async latestOpinionatedReviews(args: PageArgs) {
    return listConnection(await this.#latest('opinionated'), args);
  }

  /** Changes requested by anyone's latest opinion, else approved by one, else none (the copy knows no required reviews). */
  async reviewDecision(): Promise<string | null> {
    const states = (await this.#latest('opinionated')).map((review) => review.state);
    if (states.includes('CHANGES_REQUESTED')) return 'CHANGES_REQUESTED';
    return states.includes('APPROVED') ? 'APPROVED' : null;
  }

  async reviewRequests(args: PageArgs) {
    const owner = (await this.scope.repository())?.owner as Json | undefined;
    const rows = await objectsOfNumber(this.scope.database, this.scope.imported.id, ['pull_request_review_request'], this.number);
    return listConnection(rows.map((row) => new ReviewRequestModel(row.key, this.scope.render(row.data), owner, this.scope)), args);
  }

  readonly autoMergeRequest = null;

  /** Reactions are counted on the pull request's issue shape. */
  protected override reactionSource(): Promise<Json | undefined> {
    return this.scope.issueShape(this.number);
  }
}
