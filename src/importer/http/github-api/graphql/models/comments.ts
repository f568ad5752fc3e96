import type { ImportScope, Json } from '../context.js';
import { emptyConnection } from '../connection.js';
import { actorOf, OrganizationModel, userOf, BotModel } from './actor.js';
import { pathOf, upper } from './project-data.js';
import { reactionGroups } from './reactions.js';

/*
 * Comments, reviews, review requests and commits, from their REST JSON.
 */

const EPOCH = '1970-01-01T00:00:00Z';

/** What GitHub's comment-like objects share: author, association, body, times. */
abstract class CommentBase {
  constructor(
    protected readonly json: Json,
    protected readonly scope: ImportScope,
  ) {}

  get id(): string {
    return String(this.json.node_id ?? '');
  }

  get databaseId(): number | null {
    return typeof this.json.id === 'number' ? this.json.id : null;
  }

  author() {
    return actorOf(this.json.user, this.scope);
  }

  get authorAssociation(): string {
    return upper(this.json.author_association, 'NONE');
  }

  get body(): string {
    return String(this.json.body ?? '');
  }

  get bodyText(): string {
    return this.body;
  }

  get includesCreatedEdit(): boolean {
    return false;
  }

  get viewerDidAuthor(): boolean {
    return false;
  }

  get viewerCanUpdate(): boolean {
    return false;
  }

  get reactionGroups() {
    return reactionGroups(this.json);
  }

  get url(): string {
    return String(this.json.html_url ?? '');
  }

  get resourcePath(): string {
    return pathOf(this.url);
  }
}

export class IssueCommentModel extends CommentBase {
  readonly __typename = 'IssueComment';

  get createdAt(): string {
    return String(this.json.created_at ?? EPOCH);
  }

  get updatedAt(): string {
    return String(this.json.updated_at ?? this.createdAt);
  }

  get publishedAt(): string {
    return this.createdAt;
  }

  get lastEditedAt(): string | null {
    return null;
  }

  get isMinimized(): boolean {
    return false;
  }

  get minimizedReason(): string | null {
    return null;
  }
}

/** A commit the copy knows only by its id (a pull request's head or merge commit). */
export class CommitModel {
  readonly __typename = 'Commit';

  constructor(
    readonly oid: string,
    private readonly repoHtmlUrl: string,
    /** The closest time the copy has for it (the pull request's last update). */
    private readonly date: string,
  ) {}

  get id(): string {
    return `C_${Buffer.from(this.oid).toString('base64url')}`;
  }

  get abbreviatedOid(): string {
    return this.oid.slice(0, 7);
  }

  readonly messageHeadline = '';
  readonly messageBody = '';

  get committedDate(): string {
    return this.date;
  }

  get authoredDate(): string {
    return this.date;
  }

  get url(): string {
    return `${this.repoHtmlUrl}/commit/${this.oid}`;
  }

  authors() {
    return emptyConnection();
  }

  // The copy has no checks or statuses.
  readonly statusCheckRollup = null;
}

export class PullRequestReviewModel extends CommentBase {
  readonly __typename = 'PullRequestReview';

  constructor(
    json: Json,
    scope: ImportScope,
    private readonly repoHtmlUrl: string,
  ) {
    super(json, scope);
  }

  get state(): string {
    return upper(this.json.state, 'COMMENTED');
  }

  get submittedAt(): string | null {
    return (this.json.submitted_at as string | null | undefined) ?? null;
  }

  get createdAt(): string {
    return String(this.json.submitted_at ?? EPOCH);
  }

  get updatedAt(): string {
    return this.createdAt;
  }

  /** The reviewer's login (for latest-review-per-author). */
  get authorLogin(): string {
    return String((this.json.user as Json | null | undefined)?.login ?? '');
  }

  commit() {
    return typeof this.json.commit_id === 'string' ? new CommitModel(this.json.commit_id, this.repoHtmlUrl, this.createdAt) : null;
  }
}

export class TeamModel {
  readonly __typename = 'Team';

  constructor(
    private readonly json: Json,
    private readonly owner: Json | undefined,
    private readonly scope: ImportScope,
  ) {}

  get id(): string {
    return String(this.json.node_id ?? '');
  }

  get name(): string {
    return String(this.json.name ?? '');
  }

  get slug(): string {
    return String(this.json.slug ?? '');
  }

  get url(): string {
    return String(this.json.html_url ?? '');
  }

  /** A team belongs to the organization that owns the repository. */
  organization(): OrganizationModel {
    return new OrganizationModel(this.owner ?? { login: '' }, this.scope);
  }
}

export class ReviewRequestModel {
  readonly __typename = 'ReviewRequest';

  constructor(
    private readonly key: string,
    private readonly json: Json,
    private readonly owner: Json | undefined,
    private readonly scope: ImportScope,
  ) {}

  get id(): string {
    return `RR_${Buffer.from(this.key).toString('base64url')}`;
  }

  readonly asCodeOwner = false;

  requestedReviewer() {
    if (this.key.includes('/team/')) return new TeamModel(this.json, this.owner, this.scope);
    return this.json.type === 'Bot' ? new BotModel(this.json, this.scope) : userOf(this.json, this.scope);
  }
}
