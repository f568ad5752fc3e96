import type { FastifyReply, FastifyRequest } from 'fastify';
import { repoRoute, routeOptions, sendItems, type ApiServer, type RepoLocator } from '../context.js';
import { GithubApiError } from '../errors.js';
import { offsetOf, pageOf } from '../pagination.js';
import { sendJson } from '../respond.js';
import { RepoParams } from '../schemas.js';
import { allObjects } from '../../../store/read-api.js';
import { commitItem, branchDetail, branchItem, gitRef, tagItem } from './payloads.js';
import { openGitData, type GitDataDeps, type GitDataRequest } from './request.js';
import { BranchesQuery, BranchParams, WildcardParams } from './schemas.js';
import { missing } from './source.js';
import type { RefEntry } from './mirror-git.js';

const HEADS = 'refs/heads/';
const TAGS = 'refs/tags/';

/** The branch a stored `protected_branch` object is about (its `url` ends in `/branches/<name>/protection`). */
function protectedName(data: Record<string, unknown>): string | undefined {
  const match = /\/branches\/(.+)\/protection$/.exec(String(data.url ?? ''));
  if (!match) return undefined;
  try {
    return decodeURIComponent(match[1] as string);
  } catch {
    return undefined;
  }
}

/** The import's stored branch protections, by branch name (a repository protects few branches). */
async function protections(deps: GitDataDeps, gitData: GitDataRequest): Promise<Map<string, Record<string, unknown>>> {
  const stored = await allObjects(deps.database, gitData.context.imported.id, { types: ['protected_branch'] });
  const byName = new Map<string, Record<string, unknown>>();
  for (const data of stored) {
    const protection = JSON.parse(data) as Record<string, unknown>;
    const name = protectedName(protection);
    if (name !== undefined) byName.set(name, protection);
  }
  return byName;
}

/** Tags newest version first, as GitHub lists them (numbers compared as numbers). */
function byVersionDescending(a: RefEntry, b: RefEntry): number {
  return b.ref.localeCompare(a.ref, 'en', { numeric: true });
}

/**
 * `/branches/{branch}`: the branch with its tip as a full commit item;
 * GitHub's 404 "Branch not found" when there is none. Exported for the
 * wildcard route that takes names with unencoded slashes (repo-routes.ts).
 */
export async function answerBranch(deps: GitDataDeps, request: FastifyRequest, reply: FastifyReply, params: RepoLocator, branch: string, prefix: string): Promise<FastifyReply> {
  const gitData = await openGitData(deps, request, reply, prefix, params);
  if (!gitData) return reply;
  const { git, repo, userOf } = gitData;
  const sha = await git.commitNamed(`${HEADS}${branch}`);
  const commit = sha === undefined ? undefined : await git.commit(sha);
  if (!commit) throw await missing(git, new GithubApiError(404, 'Branch not found'));
  const stored = (await protections(deps, gitData)).get(branch);
  return sendJson(request, reply, branchDetail(repo, branch, await commitItem(repo, commit, userOf), stored));
}

/** Branches, tags and refs, from the mirror's refs. */
export function refRoutes(server: ApiServer, deps: GitDataDeps): void {
  const prefix = server.prefix;

  repoRoute(
    server,
    '/branches',
    routeOptions('Branch', 'List branches', { params: RepoParams, querystring: BranchesQuery }),
    async (request, reply) => {
      const gitData = await openGitData(deps, request, reply, prefix, request.params);
      if (!gitData) return reply;
      const page = pageOf(request.query);
      const stored = await protections(deps, gitData);
      const wanted = request.query.protected;
      const branches = (await gitData.git.refs([HEADS]))
        .map((entry) => ({ name: entry.ref.slice(HEADS.length), sha: entry.peeled ?? entry.sha }))
        .filter((branch) => wanted === undefined || (wanted === 'true') === stored.has(branch.name));
      const offset = offsetOf(page);
      const items = branches.slice(offset, offset + page.perPage).map((branch) => branchItem(gitData.repo, branch.name, branch.sha, stored.get(branch.name)));
      return sendItems(request, reply, gitData.context, items, branches.length, page);
    },
  );

  repoRoute(server, '/branches/:branch', routeOptions('Branch', 'Get a branch', { params: BranchParams }), async (request, reply) =>
    answerBranch(deps, request, reply, request.params, request.params.branch, prefix),
  );

  repoRoute(server, '/tags', routeOptions('Tag', 'List repository tags', { params: RepoParams, querystring: BranchesQuery.omit({ protected: true }) }), async (request, reply) => {
    const gitData = await openGitData(deps, request, reply, prefix, request.params);
    if (!gitData) return reply;
    const page = pageOf(request.query);
    const tags = (await gitData.git.refs([TAGS])).filter((entry) => entry.type === 'commit' || entry.peeled !== undefined).sort(byVersionDescending);
    const offset = offsetOf(page);
    const items = tags.slice(offset, offset + page.perPage).map((entry) => tagItem(gitData.repo, entry.ref.slice(TAGS.length), entry.peeled ?? entry.sha));
    return sendItems(request, reply, gitData.context, items, tags.length, page);
  });

  // `refs`: `/git/refs/{prefix}` (the ref itself when exact, else those below it, 404 when none); `matching`: always a list.
  const matching = async (request: FastifyRequest, reply: FastifyReply, params: RepoLocator, wanted: string, form: 'refs' | 'matching') => {
    const exactIsObject = form === 'refs';
    const gitData = await openGitData(deps, request, reply, prefix, params);
    if (!gitData) return reply;
    const all = await gitData.git.refs(['refs/']);
    const full = wanted === '' ? 'refs/' : `refs/${wanted.replace(/^refs\//, '')}`;
    const exact = all.find((entry) => entry.ref === full);
    if (exactIsObject && exact) return sendJson(request, reply, gitRef(gitData.repo, exact));
    const found = all.filter((entry) => entry.ref.startsWith(full)).map((entry) => gitRef(gitData.repo, entry));
    // `/git/refs/{prefix}` with nothing below it is a 404; `/git/matching-refs/{ref}` an empty list.
    if (exactIsObject && found.length === 0) throw await missing(gitData.git);
    return sendJson(request, reply, found);
  };

  repoRoute(server, '/git/refs', routeOptions('Reference', 'List references', { params: RepoParams }), async (request, reply) =>
    matching(request, reply, request.params, '', 'refs'),
  );
  repoRoute(server, '/git/refs/*', routeOptions('Reference', 'List references below a prefix (a single one when exact)', { params: WildcardParams('`heads/…`, `tags/…`') }), async (request, reply) =>
    matching(request, reply, request.params, request.params['*'], 'refs'),
  );
  repoRoute(server, '/git/matching-refs/*', routeOptions('Reference', 'List matching references', { params: WildcardParams('a ref prefix: `heads/feat`') }), async (request, reply) =>
    matching(request, reply, request.params, request.params['*'], 'matching'),
  );
  repoRoute(server, '/git/ref/*', routeOptions('Reference', 'Get a reference', { params: WildcardParams('`heads/<branch>` or `tags/<tag>`') }), async (request, reply) => {
    const gitData = await openGitData(deps, request, reply, prefix, request.params);
    if (!gitData) return reply;
    const full = `refs/${request.params['*'].replace(/^refs\//, '')}`;
    const found = (await gitData.git.refs(['refs/'])).find((entry) => entry.ref === full);
    if (!found) throw await missing(gitData.git);
    return sendJson(request, reply, gitRef(gitData.repo, found));
  });
}
