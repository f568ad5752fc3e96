import type { FastifyReply, FastifyRequest } from 'fastify';
import { repoContext, type RepoContext, type RepoLocator, type RouteDeps } from '../context.js';
import { notFound } from '../errors.js';
import { ApiLinks, renderLinks } from '../links.js';
import { repositoryData, userData } from '../../../store/read-api.js';
import type { MirrorGit } from './mirror-git.js';
import type { RepoLinks, UserOf } from './payloads.js';
import type { MirrorLocator } from './source.js';

/** What the git-data routes read from: the API's, and the import mirrors. */
export interface GitDataDeps extends RouteDeps {
  mirrors: MirrorLocator;
}

/** One git-data request: the import, its mirror, its links, and who its commits' emails belong to. */
export interface GitDataRequest {
  context: RepoContext;
  git: MirrorGit;
  repo: RepoLinks;
  userOf: UserOf;
  /** The repository's default branch (what a missing `ref` means). */
  defaultBranch: string;
}

/** The fields of GitHub's `simple-user`, as commits embed their author and committer. */
const SIMPLE_USER = [
  'login', 'id', 'node_id', 'avatar_url', 'gravatar_id', 'url', 'html_url', 'followers_url', 'following_url', 'gists_url', 'starred_url',
  'subscriptions_url', 'organizations_url', 'repos_url', 'events_url', 'received_events_url', 'type', 'user_view_type', 'site_admin',
];

/** The login a GitHub noreply address names (`<id>+<login>@users.noreply.github.com` or `<login>@…`), if it is one. */
export function noreplyLogin(email: string): string | undefined {
  return /^(?:\d+\+)?([^@+]+)@users\.noreply\.(?:github\.com|[^@]+)$/i.exec(email)?.[1];
}

/**
 * Who a commit's email belongs to, as GitHub shows it: the account of a
 * GitHub noreply address, when the import recorded that user's profile
 * (its `simple-user` fields, links pointed at the copy); else null. Looked
 * up once per email and request.
 */
function usersOf(deps: RouteDeps, base: string): UserOf {
  const found = new Map<string, Promise<Record<string, unknown> | null>>();
  const lookup = async (email: string): Promise<Record<string, unknown> | null> => {
    const login = noreplyLogin(email);
    if (login === undefined) return null;
    const stored = await userData(deps.database, login);
    if (!stored) return null;
    const profile = JSON.parse(stored.data) as Record<string, unknown>;
    const user = Object.fromEntries(SIMPLE_USER.filter((key) => key in profile).map((key) => [key, profile[key]]));
    return renderLinks(user, { links: new ApiLinks(stored.apiUrl, base), base });
  };
  return (email) => {
    const key = email.toLowerCase();
    let user = found.get(key);
    if (!user) {
      user = lookup(key);
      found.set(key, user);
    }
    return user;
  };
}

/**
 * Opens the import a git-data request names (`/repos/{owner}/{repo}/…` or `/repositories/{id}/…`), and
 * its mirror; undefined when the request was forwarded whole to the worker
 * of the mirror's shard (distributed mode) and is answered already.
 * @throws GithubApiError 404 (no such import, no repository), 409 (no mirror yet)
 */
export async function openGitData(
  deps: GitDataDeps,
  request: FastifyRequest,
  reply: FastifyReply,
  prefix: string,
  params: RepoLocator,
): Promise<GitDataRequest | undefined> {
  const context = await repoContext(deps, request, prefix, params);
  const data = await repositoryData(deps.database, context.imported.id);
  if (data === undefined) throw notFound();
  const mirror = await deps.mirrors.open(context.imported.id, request, reply, { copy: context.base, prefix });
  if (mirror.kind === 'forwarded') return undefined;
  const repository = context.render(data);
  const owner = (repository.owner as { login?: unknown } | undefined)?.login;
  const repo: RepoLinks = {
    api: String(repository.url),
    web: String(repository.html_url),
    id: Number(repository.id),
    owner: typeof owner === 'string' ? owner : context.imported.name,
    name: typeof repository.name === 'string' ? repository.name : context.imported.name,
  };
  const defaultBranch = typeof repository.default_branch === 'string' ? repository.default_branch : 'main';
  return { context, git: mirror.git, repo, userOf: usersOf(deps, context.base), defaultBranch };
}
