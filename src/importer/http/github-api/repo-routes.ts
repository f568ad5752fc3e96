import type { FastifyReply, FastifyRequest } from 'fastify';
import { copyOrigin, repoContext, routeOptions, sendItems, sendPage, type ApiServer, type RouteDeps } from './context.js';
import { notFound } from './errors.js';
import { offsetOf, pageOf } from './pagination.js';
import { allObjects, listObjects, objectByKey, repositoryData, userData } from '../../store/read-api.js';
import { sendJson } from './respond.js';
import { ApiLinks, renderLinks } from './links.js';
import { BranchProtectionParams, BranchProtectionWildcardParams, MilestonesQuery, PagingQuery, RepoParams, UserParams } from './schemas.js';

const PROTECTION_SUFFIX = '/protection';

/** A milestone's share of closed issues (0 without issues), for `sort=completeness`. */
function completeness(milestone: Record<string, unknown>): number {
  const open = Number(milestone.open_issues ?? 0);
  const closed = Number(milestone.closed_issues ?? 0);
  return open + closed > 0 ? closed / (open + closed) : 0;
}

/**
 * Milestones in the order asked for: by `due_on` (those without a due date
 * last) or by completeness, then by number; `desc` reverses it all.
 */
export function sortMilestones(milestones: Record<string, unknown>[], sort: 'due_on' | 'completeness', direction: 'asc' | 'desc'): Record<string, unknown>[] {
  const dueOf = (m: Record<string, unknown>) => (typeof m.due_on === 'string' ? m.due_on : undefined);
  const byNumber = (a: Record<string, unknown>, b: Record<string, unknown>) => Number(a.number ?? 0) - Number(b.number ?? 0);
  const ascending = [...milestones].sort((a, b) => {
    if (sort === 'completeness') return completeness(a) - completeness(b) || byNumber(a, b);
    const [da, db] = [dueOf(a), dueOf(b)];
    if (da !== db) {
      if (da === undefined) return 1;
      if (db === undefined) return -1;
      return da < db ? -1 : 1;
    }
    return byNumber(a, b);
  });
  return direction === 'desc' ? ascending.reverse() : ascending;
}

/** The repository and its project data that are not issues or pull requests; users. */
export function repoRoutes(server: ApiServer, deps: RouteDeps): void {
  repositoryListRoutes(server, deps);
  branchProtectionRoutes(server, deps);
  userRoutes(server, deps);
}

/** The repository, and its labels, milestones, releases and collaborators. */
function repositoryListRoutes(server: ApiServer, deps: RouteDeps): void {
  const prefix = server.prefix;

  server.get('/repos/:owner/:repo', routeOptions('Repository', 'Get a repository', { params: RepoParams }), async (request, reply) => {
    const context = await repoContext(deps, request, prefix, request.params);
    const data = await repositoryData(deps.database, context.imported.id);
    if (data === undefined) throw notFound();
    return sendJson(request, reply, context.render(data));
  });

  server.get(
    '/repos/:owner/:repo/labels',
    routeOptions('Label', 'List labels for a repository', { params: RepoParams, querystring: PagingQuery }),
    async (request, reply) => {
      const context = await repoContext(deps, request, prefix, request.params);
      const page = pageOf(request.query);
      const result = await listObjects(deps.database, context.imported.id, { types: ['label'], sort: 'id', direction: 'asc', page });
      return sendPage(request, reply, context, result, page);
    },
  );

  server.get(
    '/repos/:owner/:repo/milestones',
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

  server.get(
    '/repos/:owner/:repo/releases',
    routeOptions('Release', 'List releases (newest first)', { params: RepoParams, querystring: PagingQuery }),
    async (request, reply) => {
      const context = await repoContext(deps, request, prefix, request.params);
      const page = pageOf(request.query);
      const result = await listObjects(deps.database, context.imported.id, { types: ['release'], sort: 'created_at', direction: 'desc', page });
      return sendPage(request, reply, context, result, page);
    },
  );

  server.get(
    '/repos/:owner/:repo/collaborators',
    routeOptions('Collaborator', 'List repository collaborators', { params: RepoParams, querystring: PagingQuery }),
    async (request, reply) => {
      const context = await repoContext(deps, request, prefix, request.params);
      const page = pageOf(request.query);
      const result = await listObjects(deps.database, context.imported.id, { types: ['collaborator'], sort: 'id', direction: 'asc', page });
      return sendPage(request, reply, context, result, page);
    },
  );
}

/** A protected branch's settings, with the branch name encoded or not. */
function branchProtectionRoutes(server: ApiServer, deps: RouteDeps): void {
  const prefix = server.prefix;
  const protection = async (request: FastifyRequest, reply: FastifyReply, params: { owner: string; repo: string }, branch: string) => {
    const context = await repoContext(deps, request, prefix, params);
    const data = await objectByKey(deps.database, context.imported.id, 'protected_branch', branch);
    if (data === undefined) throw notFound();
    return sendJson(request, reply, context.render(data));
  };
  server.get(
    '/repos/:owner/:repo/branches/:branch/protection',
    routeOptions('ProtectedBranch', 'Get branch protection', { params: BranchProtectionParams }),
    async (request, reply) => protection(request, reply, request.params, request.params.branch),
  );
  // The same with the branch's slashes unencoded (`/branches/release/1.x/protection`), as GitHub takes it too.
  server.get(
    '/repos/:owner/:repo/branches/*',
    { schema: { hide: true, params: BranchProtectionWildcardParams }, config: { resource: 'ProtectedBranch' } },
    async (request, reply) => {
      const rest = request.params['*'];
      if (!rest.endsWith(PROTECTION_SUFFIX) || rest.length === PROTECTION_SUFFIX.length) throw notFound();
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
