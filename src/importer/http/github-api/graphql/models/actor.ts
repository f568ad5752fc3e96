import type { ImportScope, Json } from '../context.js';

/*
 * Users, bots and organizations, from the user objects GitHub's REST JSON
 * embeds (`user`, `assignees`, `owner`…): `User` for a user, `Bot` for an
 * app (whose GraphQL login drops REST's `[bot]`), `Organization` for an
 * owner that is one. A user's `name` and profile fields come from the
 * stored profile (github_users), when the import fetched it.
 */

/** `avatar_url` with GitHub's `s=<size>` when a size is asked for. */
function avatar(url: unknown, size: number | null | undefined): string {
  const base = typeof url === 'string' ? url : '';
  if (typeof size !== 'number' || base === '') return base;
  return `${base}${base.includes('?') ? '&' : '?'}s=${size}`;
}

abstract class ActorBase {
  constructor(
    protected readonly json: Json,
    protected readonly scope: ImportScope | null,
  ) {}

  get id(): string {
    return String(this.json.node_id ?? '');
  }

  get databaseId(): number | null {
    return typeof this.json.id === 'number' ? this.json.id : null;
  }

  get login(): string {
    return String(this.json.login ?? '');
  }

  avatarUrl(args: { size?: number | null }): string {
    return avatar(this.json.avatar_url, args.size);
  }

  get url(): string {
    return String(this.json.html_url ?? '');
  }

  get resourcePath(): string {
    return `/${this.login}`;
  }
}

export class UserModel extends ActorBase {
  readonly __typename = 'User';

  async #profile(): Promise<Json> {
    if (this.json.name !== undefined || this.scope === null) return this.json;
    return (await this.scope.profile(this.login)) ?? this.json;
  }

  async name(): Promise<string | null> {
    const name = (await this.#profile()).name;
    return typeof name === 'string' ? name : null;
  }

  async email(): Promise<string> {
    const email = (await this.#profile()).email;
    return typeof email === 'string' ? email : '';
  }

  async bio(): Promise<string | null> {
    return ((await this.#profile()).bio as string | null | undefined) ?? null;
  }

  async company(): Promise<string | null> {
    return ((await this.#profile()).company as string | null | undefined) ?? null;
  }

  async location(): Promise<string | null> {
    return ((await this.#profile()).location as string | null | undefined) ?? null;
  }

  async websiteUrl(): Promise<string | null> {
    const blog = (await this.#profile()).blog;
    return typeof blog === 'string' && blog !== '' ? blog : null;
  }

  async twitterUsername(): Promise<string | null> {
    return ((await this.#profile()).twitter_username as string | null | undefined) ?? null;
  }

  get isSiteAdmin(): boolean {
    return this.json.site_admin === true;
  }

  async createdAt(): Promise<string> {
    return String((await this.#profile()).created_at ?? '1970-01-01T00:00:00Z');
  }

  async updatedAt(): Promise<string> {
    return String((await this.#profile()).updated_at ?? '1970-01-01T00:00:00Z');
  }
}

export class BotModel extends ActorBase {
  readonly __typename = 'Bot';

  override get login(): string {
    return String(this.json.login ?? '').replace(/\[bot\]$/, '');
  }

  override get resourcePath(): string {
    return `/apps/${this.login}`;
  }

  get createdAt(): string {
    return '1970-01-01T00:00:00Z';
  }

  get updatedAt(): string {
    return '1970-01-01T00:00:00Z';
  }
}

export class OrganizationModel extends ActorBase {
  readonly __typename = 'Organization';

  async name(): Promise<string | null> {
    const profile = this.scope ? await this.scope.profile(this.login) : undefined;
    return typeof profile?.name === 'string' ? profile.name : null;
  }
}

export type ActorModel = UserModel | BotModel | OrganizationModel;

/** The actor a REST user object stands for (null for a missing one, as GitHub's GraphQL gives for a deleted user). */
export function actorOf(json: unknown, scope: ImportScope | null): ActorModel | null {
  if (json === null || typeof json !== 'object') return null;
  const user = json as Json;
  if (user.type === 'Bot') return new BotModel(user, scope);
  if (user.type === 'Organization') return new OrganizationModel(user, scope);
  return new UserModel(user, scope);
}

/** A REST user object as a `User` (assignees, reactors, release authors: GitHub types those as User). */
export function userOf(json: unknown, scope: ImportScope | null): UserModel | null {
  return json !== null && typeof json === 'object' ? new UserModel(json as Json, scope) : null;
}

/** The synthetic user `viewer` answers: the copy's readers hold tokens, not GitHub accounts. */
export function viewerUser(login: string): UserModel {
  return new UserModel({ login, id: 0, node_id: `U_${Buffer.from(login).toString('base64url')}`, name: null, html_url: '', avatar_url: '', type: 'User', site_admin: false }, null);
}
