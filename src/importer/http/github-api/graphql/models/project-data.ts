import { listConnection, type PageArgs } from '../connection.js';
import type { ImportScope, Json } from '../context.js';
import { actorOf, userOf } from './actor.js';
import { reactionGroups } from './reactions.js';

/*
 * Labels, milestones, releases and their assets, from their REST JSON.
 */

const EPOCH = '1970-01-01T00:00:00Z';

/** Upper-case enum value of a REST lower-case one (`open` → `OPEN`). */
export function upper(value: unknown, fallback: string): string {
  return typeof value === 'string' && value !== '' ? value.toUpperCase() : fallback;
}

/** The path of a github.com web URL (`https://github.com/o/r/issues/1` → `/o/r/issues/1`). */
export function pathOf(url: unknown): string {
  if (typeof url !== 'string') return '';
  try {
    return new URL(url).pathname;
  } catch {
    return '';
  }
}

export class LabelModel {
  readonly __typename = 'Label';

  constructor(
    private readonly json: Json,
    /** The repository's web URL: a label's GraphQL `url` is its page there. */
    private readonly repoHtmlUrl: string,
  ) {}

  get id(): string {
    return String(this.json.node_id ?? '');
  }

  get name(): string {
    return String(this.json.name ?? '');
  }

  get color(): string {
    return String(this.json.color ?? '');
  }

  get description(): string | null {
    return (this.json.description as string | null | undefined) ?? null;
  }

  get isDefault(): boolean {
    return this.json.default === true;
  }

  get url(): string {
    return `${this.repoHtmlUrl}/labels/${encodeURIComponent(this.name)}`;
  }

  get resourcePath(): string {
    return pathOf(this.url);
  }

  // REST's labels carry no times: GitHub's GraphQL has them, the copy does not.
  readonly createdAt = null;
  readonly updatedAt = null;
}

export class MilestoneModel {
  readonly __typename = 'Milestone';

  constructor(
    private readonly json: Json,
    private readonly scope: ImportScope,
  ) {}

  get id(): string {
    return String(this.json.node_id ?? '');
  }

  get number(): number {
    return Number(this.json.number ?? 0);
  }

  get title(): string {
    return String(this.json.title ?? '');
  }

  get description(): string | null {
    return (this.json.description as string | null | undefined) ?? null;
  }

  get dueOn(): string | null {
    return (this.json.due_on as string | null | undefined) ?? null;
  }

  get state(): string {
    return upper(this.json.state, 'OPEN');
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
    return String(this.json.updated_at ?? this.json.created_at ?? EPOCH);
  }

  creator() {
    return actorOf(this.json.creator, this.scope);
  }

  get progressPercentage(): number {
    const open = Number(this.json.open_issues ?? 0);
    const closed = Number(this.json.closed_issues ?? 0);
    return open + closed === 0 ? 0 : (closed / (open + closed)) * 100;
  }

  get url(): string {
    return String(this.json.html_url ?? '');
  }

  get resourcePath(): string {
    return pathOf(this.url);
  }
}

export class ReleaseAssetModel {
  readonly __typename = 'ReleaseAsset';

  readonly #release: ReleaseModel;

  constructor(
    private readonly json: Json,
    release: ReleaseModel,
    private readonly scope: ImportScope,
  ) {
    this.#release = release;
  }

  get id(): string {
    return String(this.json.node_id ?? '');
  }

  get name(): string {
    return String(this.json.name ?? '');
  }

  get contentType(): string {
    return String(this.json.content_type ?? '');
  }

  get size(): number {
    return Number(this.json.size ?? 0);
  }

  get downloadCount(): number {
    return Number(this.json.download_count ?? 0);
  }

  get downloadUrl(): string {
    return String(this.json.browser_download_url ?? '');
  }

  get url(): string {
    return String(this.json.browser_download_url ?? '');
  }

  get createdAt(): string {
    return String(this.json.created_at ?? EPOCH);
  }

  get updatedAt(): string {
    return String(this.json.updated_at ?? this.json.created_at ?? EPOCH);
  }

  uploadedBy() {
    return userOf(this.json.uploader, this.scope);
  }

  release(): ReleaseModel {
    return this.#release;
  }
}

export class ReleaseModel {
  readonly __typename = 'Release';

  constructor(
    private readonly json: Json,
    private readonly scope: ImportScope,
    /** The id of the repository's latest release (the newest published, non-draft, non-prerelease), when known. */
    private readonly latestId: number | null,
  ) {}

  get isLatest(): boolean {
    return this.latestId !== null && this.json.id === this.latestId;
  }

  get id(): string {
    return String(this.json.node_id ?? '');
  }

  get databaseId(): number | null {
    return typeof this.json.id === 'number' ? this.json.id : null;
  }

  get name(): string | null {
    return (this.json.name as string | null | undefined) || null;
  }

  get tagName(): string {
    return String(this.json.tag_name ?? '');
  }

  get description(): string | null {
    return (this.json.body as string | null | undefined) ?? null;
  }

  get isDraft(): boolean {
    return this.json.draft === true;
  }

  get isPrerelease(): boolean {
    return this.json.prerelease === true;
  }

  get createdAt(): string {
    return String(this.json.created_at ?? EPOCH);
  }

  get publishedAt(): string | null {
    return (this.json.published_at as string | null | undefined) ?? null;
  }

  get updatedAt(): string {
    return String(this.json.updated_at ?? this.json.published_at ?? this.json.created_at ?? EPOCH);
  }

  author() {
    return userOf(this.json.author, this.scope);
  }

  get url(): string {
    return String(this.json.html_url ?? '');
  }

  get resourcePath(): string {
    return pathOf(this.url);
  }

  releaseAssets(args: PageArgs & { name?: string | null }) {
    const assets = Array.isArray(this.json.assets) ? (this.json.assets as Json[]) : [];
    const named = typeof args.name === 'string' ? assets.filter((asset) => asset.name === args.name) : assets;
    return listConnection(named.map((asset) => new ReleaseAssetModel(asset, this, this.scope)), args);
  }

  get reactionGroups() {
    return reactionGroups(this.json);
  }
}
