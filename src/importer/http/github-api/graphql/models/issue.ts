import { countSelection, keysetPage } from '../../../../store/graphql-reads.js';
import { emptyConnection, keysetConnection, listConnection, type PageArgs } from '../connection.js';
import type { ImportScope, Json } from '../context.js';
import { actorOf, userOf } from './actor.js';
import { IssueCommentModel } from './comments.js';
import { LabelModel, MilestoneModel, pathOf, upper } from './project-data.js';
import { reactionGroups } from './reactions.js';
import { RepositoryModel } from './repository.js';

/*
 * Issues, from the stored `/issues` JSON; IssueLike holds what an issue and
 * a pull request share (a pull request's comments are its issue's).
 */

const EPOCH = '1970-01-01T00:00:00Z';

export abstract class IssueLike {
  constructor(
    protected readonly json: Json,
    readonly scope: ImportScope,
  ) {}

  get id(): string {
    return String(this.json.node_id ?? '');
  }

  get databaseId(): number | null {
    return typeof this.json.id === 'number' ? this.json.id : null;
  }

  get number(): number {
    return Number(this.json.number ?? 0);
  }

  get title(): string {
    return String(this.json.title ?? '');
  }

  get body(): string {
    return String(this.json.body ?? '');
  }

  get bodyText(): string {
    return this.body;
  }

  get url(): string {
    return String(this.json.html_url ?? '');
  }

  get resourcePath(): string {
    return pathOf(this.url);
  }

  get closed(): boolean {
    return this.json.state === 'closed';
  }

  get closedAt(): string | null {
    return (this.json.closed_at as string | null | undefined) ?? null;
  }

  get createdAt(): string {
    return String(this.json.created_at ?? EPOCH);
  }

  get updatedAt(): string {
    return String(this.json.updated_at ?? this.createdAt);
  }

  get publishedAt(): string {
    return this.createdAt;
  }

  readonly lastEditedAt = null;
  readonly includesCreatedEdit = false;
  readonly viewerDidAuthor = false;
  readonly viewerCanUpdate = false;

  get locked(): boolean {
    return this.json.locked === true;
  }

  get activeLockReason(): string | null {
    return typeof this.json.active_lock_reason === 'string' ? this.json.active_lock_reason.toUpperCase().replace(/ /g, '_') : null;
  }

  author() {
    return actorOf(this.json.user, this.scope);
  }

  get authorAssociation(): string {
    return upper(this.json.author_association, 'NONE');
  }

  async repository(): Promise<RepositoryModel | null> {
    const json = await this.scope.repository();
    return json ? new RepositoryModel(json, this.scope) : null;
  }

  assignees(args: PageArgs) {
    const users = Array.isArray(this.json.assignees) ? (this.json.assignees as Json[]) : this.json.assignee ? [this.json.assignee as Json] : [];
    return listConnection(users.map((user) => userOf(user, this.scope)), args);
  }

  async labels(args: PageArgs) {
    const repoHtml = String((await this.scope.repository())?.html_url ?? '');
    const labels = Array.isArray(this.json.labels) ? (this.json.labels as Json[]) : [];
    return listConnection(labels.map((label) => new LabelModel(label, repoHtml)), args);
  }

  milestone(): MilestoneModel | null {
    return this.json.milestone ? new MilestoneModel(this.json.milestone as Json, this.scope) : null;
  }

  /** The issue's (or pull request's) comments, oldest first, a keyset page at a time. */
  comments(args: PageArgs) {
    const { database, imported } = this.scope;
    const selection = { types: ['note'] as const, number: this.number };
    return keysetConnection(
      {
        read: (bounds) => keysetPage(database, imported.id, { ...selection, ...bounds, order: 'created_at', direction: 'asc' }),
        nodes: async (rows) => rows.map((row) => new IssueCommentModel(this.scope.render(row.data), this.scope)),
        count: () => countSelection(database, imported.id, selection),
      },
      args,
    );
  }

  async reactionGroups() {
    return reactionGroups(await this.reactionSource());
  }

  /** The JSON whose `reactions` summary counts this object's reactions. */
  protected reactionSource(): Promise<Json | undefined> | Json {
    return this.json;
  }

  projectCards() {
    return emptyConnection();
  }

  projectItems() {
    return emptyConnection();
  }
}

export class IssueModel extends IssueLike {
  readonly __typename = 'Issue';

  get state(): string {
    return upper(this.json.state, 'OPEN');
  }

  get stateReason(): string | null {
    return typeof this.json.state_reason === 'string' ? this.json.state_reason.toUpperCase() : null;
  }

  readonly isPinned = false;
}
