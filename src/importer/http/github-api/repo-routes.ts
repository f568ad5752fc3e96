import type { FastifyReply, FastifyRequest } from 'fastify';
import { copyOrigin, repoContext, repoRoute, routeOptions, sendItems, sendPage, type ApiServer, type RepoLocator, type RouteDeps } from './context.js';
import { notFound } from './errors.js';
import { offsetOf, pageOf } from './pagination.js';
import { allObjects, listObjects, objectByKey, repositoryData, userData } from '../../store/read-api.js';
import { sendJson } from './respond.js';
import { ApiLinks, renderLinks } from './links.js';
import { BranchProtectionParams, BranchProtectionWildcardParams, CollaboratorsQuery, MilestonesQuery, PagingQuery, RepoParams, UserParams } from './schemas.js';

const PROTECTION_SUFFIX = '/protection';

/** A milestone's share of closed issues (0 without issues), for `sort=completeness`. */
function completeness(milestone: Record<string, unknown>): number {
  const open = Number(milestone.open_issues ?? 0);
  const closed = Number(milestone.closed_issues ?? 0);
  return open + closed > 0 ? closed / (open + closed) : 0;
}

/**
 * Milestones in the order asked for: by `due_on` or by completeness, then
 * by number, all in `direction` — except that those without a due date come
 * last in either direction, as GitHub puts them.
 */
export function sortMilestones(milestones: Record<string, unknown>[], sort: 'due_on' | 'completeness', direction: 'asc' | 'desc'): Record<string, unknown>[] {
  const dueOf = (m: Record<string, unknown>) => (typeof m.due_on === 'string' ? m.due_on : undefined);
  const sign = direction === 'desc' ? -1 : 1;
  const byNumber = (a: Record<string, unknown>, b: Record<string, unknown>) => Number(a.number ?? 0) - Number(b.number ?? 0);
  return [...milestones].sort((a, b) => {
    if (sort === 'completeness') return sign * (completeness(a) - completeness(b) || byNumber(a, b));
    const [da, db] = [dueOf(a), dueOf(b)];
    if (da === undefined || db === undefined) return da === db ? sign * byNumber(a, b) : da === undefined ? 1 : -1;
    return sign * (da < db ? -1 : da > db ? 1 : byNumber(a, b));
  });
}

/** The repository and its project data that are not issues or pull requests; users. */
/** Answers `/branches/{branch}` (the git-data routes' answer), for a name whose slashes came unencoded. */
export type BranchAnswer = (request: FastifyRequest, reply: FastifyReply, params: RepoLocator, branch: string) => Promise<FastifyReply>;

export function repoRoutes(server: ApiServer, deps: RouteDeps, branch?: BranchAnswer): void {
  repositoryListRoutes(server, deps);
  branchProtectionRoutes(server, deps, branch);
  userRoutes(server, deps);
}

/** The repository, and its labels, milestones, releases and collaborators. */
function repositoryListRoutes(server: ApiServer, deps: RouteDeps): void {
  const prefix = server.prefix;

  repoRoute(server, '', routeOptions('Repository', 'Get a repository', { params: RepoParams }), async (request, reply) => {
    const context = await repoContext(deps, request, prefix, request.params);
    const data = await repositoryData(deps.database, context.imported.id);
    if (data === undefined) throw notFound();
    return sendJson(request, reply, context.render(data));
  });

  repoRoute(
    server,
    '/labels',
    routeOptions('Label', 'List labels for a repository', { params: RepoParams, querystring: PagingQuery }),
    async (request, reply) => {
      const context = await repoContext(deps, request, prefix, request.params);
      const page = pageOf(request.query);
      // GitHub lists labels by name, whatever the case (`state` holds the lower-cased name), then by id.
      const result = await listObjects(deps.database, context.imported.id, { types: ['label'], sort: 'name', direction: 'asc', page });
      return sendPage(request, reply, context, result, page);
    },
  );

  repoRoute(
    server,
    '/milestones',
    routeOptions('Milestone', 'List milestones', { params: RepoParams, querystring: MilestonesQuery }),
    async (request, reply) => {
      const context = await repoContext(deps, request, prefix, request.params);
      const query = request.query;
      const page = pageOf(query);
      // A repository has few milestones, and `due_on` is only in the JSON: sort them here.
      const all = sortMilestones(
        (await allObjects(deps.database, context.imported.id, { types: ['milestone'], state: query.state })).map((data) => context.render(data)),
        query.sort,
        query.direction,
      );
      const offset = offsetOf(page);
      return sendItems(request, reply, context, all.slice(offset, offset + page.perPage), all.length, page);
    },
  );

  repoRoute(
    server,
    '/releases',
    routeOptions('Release', 'List releases (newest first)', { params: RepoParams, querystring: PagingQuery }),
    async (request, reply) => {
      const context = await repoContext(deps, request, prefix, request.params);
      const page = pageOf(request.query);
      const result = await listObjects(deps.database, context.imported.id, { types: ['release'], sort: 'created_at', direction: 'desc', page });
      return sendPage(request, reply, context, result, page);
    },
  );

  repoRoute(
    server,
    '/collaborators',
    routeOptions('Collaborator', 'List repository collaborators', { params: RepoParams, querystring: CollaboratorsQuery }),
    async (request, reply) => {
      const context = await repoContext(deps, request, prefix, request.params);
      const { affiliation, permission } = request.query;
      const page = pageOf(request.query);
      // Every collaborator the import listed (`all`), or those the `direct`/`outside` list marked; the permission from the
      // `permissions` each was listed with. In id order, as GitHub lists them.
      const filter = { ...(affiliation === 'all' ? {} : { affiliation }), ...(permission === undefined ? {} : { permission }) };
      const result = await listObjects(deps.database, context.imported.id, { types: ['collaborator'], ...filter, sort: 'id', direction: 'asc', page });
      return sendPage(request, reply, context, result, page);
    },
  );
}

/** A protected branch's settings, with the branch name encoded or not; and a branch named with unencoded slashes (`branch`). */
function branchProtectionRoutes(server: ApiServer, deps: RouteDeps, branch: BranchAnswer | undefined): void {
  const prefix = server.prefix;
  const protection = async (request: FastifyRequest, reply: FastifyReply, params: RepoLocator, branch: string) => {
    const context = await repoContext(deps, request, prefix, params);
    const data = await objectByKey(deps.database, context.imported.id, 'protected_branch', branch);
    if (data === undefined) throw notFound();
    return sendJson(request, reply, context.render(data));
  };
  repoRoute(
    server,
    '/branches/:branch/protection',
    routeOptions('ProtectedBranch', 'Get branch protection', { params: BranchProtectionParams }),
    async (request, reply) => protection(request, reply, request.params, request.params.branch),
  );
  // The same with the branch's slashes unencoded (`/branches/release/1.x/protection`), as GitHub takes it too;
  // without the suffix, the branch itself (`/branches/release/1.x`), answered by the git-data routes.
  repoRoute(
    server,
    '/branches/*',
    { schema: { hide: true, params: BranchProtectionWildcardParams }, config: { resource: 'ProtectedBranch' } },
    async (request, reply) => {
      const rest = request.params['*'];
      if (!rest.endsWith(PROTECTION_SUFFIX)) {
        if (branch) return branch(request, reply, request.params, rest);
        throw notFound();
      }
      if (rest.length === PROTECTION_SUFFIX.length) throw notFound();
      return protection(request, reply, request.params, rest.slice(0, -PROTECTION_SUFFIX.length));
    },
  );
}

/** A user, as the import recorded them. */
function userRoutes(server: ApiServer, deps: RouteDeps): void {
  server.get('/users/:username', routeOptions('User', 'Get a user', { params: UserParams }), async (request, reply) => {
    const found = await userData(deps.database, request.params.username);
    if (found === undefined) throw notFound();
    // Not below a repository: the profile's links are those of the API host it was fetched from.
    const base = copyOrigin(deps, request) + server.prefix;
    return sendJson(request, reply, renderLinks(JSON.parse(found.data) as unknown, { links: new ApiLinks(found.apiUrl, base), base }));
  });
}
