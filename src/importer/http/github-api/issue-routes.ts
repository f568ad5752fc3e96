import type { StoredType } from '../../types.js';
import { repoContext, repoRoute, routeOptions, sendPage, type ApiServer, type RepoContext, type RouteDeps } from './context.js';
import { notFound, validationFailed } from './errors.js';
import { issueListOf, milestoneNumberOf, repoCommentOrderOf } from './list-queries.js';
import { renderedPage, sendListAnswer } from './list-answers.js';
import { embeddedIssue, issueEvent, missingIssue } from './issue-shapes.js';
import { pageOf } from './pagination.js';
import { countObjects, issuesByNumber, listObjects, objectByNumber } from '../../store/read-api.js';
import { sendJson } from './respond.js';
import { CommentsQuery, IssueParams, IssuesQuery, PagingQuery, RepoCommentsQuery, RepoParams, labelNames, normaliseSince } from './schemas.js';

/** What `/issues` lists: issues and pull requests' issue shapes. */
export const ISSUE_TYPES: readonly StoredType[] = ['issue', 'pull_request_issue'];
/** What answers for an issue number: either shape, or at least the pull request. */
const NUMBER_TYPES: readonly StoredType[] = ['issue', 'pull_request_issue', 'pull_request'];

function sinceOf(since: string | undefined): { since?: string } {
  const normalised = since === undefined ? undefined : normaliseSince(since);
  return normalised === undefined ? {} : { since: normalised };
}

/** 404 (410 when deleted: missingIssue) unless issue or pull request `number` was imported (its comments and events are answered only then, as on GitHub). */
async function requireNumber(deps: RouteDeps, context: RepoContext, number: number): Promise<void> {
  if ((await countObjects(deps.database, context.imported.id, { types: NUMBER_TYPES, number })) === 0) throw await missingIssue(deps, context, number);
}

/** Issues, their comments and their events. */
export function issueRoutes(server: ApiServer, deps: RouteDeps): void {
  repositoryWideRoutes(server, deps);
  perIssueRoutes(server, deps);
}

/** The repository's issues, and the comments and events of all of them. */
function repositoryWideRoutes(server: ApiServer, deps: RouteDeps): void {
  const prefix = server.prefix;

  repoRoute(
    server,
    '/issues',
    routeOptions('Issue', 'List repository issues (and pull requests)', { params: RepoParams, querystring: IssuesQuery }),
    async (request, reply) => {
      const context = await repoContext(deps, request, prefix, request.params);
      const query = request.query;
      return sendListAnswer(deps.database, request, reply, context, async () => {
        const page = pageOf(query);
        const milestone = milestoneNumberOf(query);
        // A milestone number that does not exist is GitHub's 422, not an empty list.
        if (milestone !== undefined && (await countObjects(deps.database, context.imported.id, { types: ['milestone'], number: milestone })) === 0) {
          throw validationFailed('Issue', ['milestone']);
        }
        const result = await listObjects(deps.database, context.imported.id, {
          types: ISSUE_TYPES,
          ...issueListOf(query),
          labels: labelNames(query.labels),
          ...sinceOf(query.since),
          page,
        });
        return renderedPage(context, result, page);
      });
    },
  );

  repoRoute(
    server,
    '/issues/comments',
    routeOptions('IssueComment', 'List issue comments for a repository', { params: RepoParams, querystring: RepoCommentsQuery }),
    async (request, reply) => {
      const context = await repoContext(deps, request, prefix, request.params);
      const query = request.query;
      return sendListAnswer(deps.database, request, reply, context, async () => {
        const page = pageOf(query);
        const result = await listObjects(deps.database, context.imported.id, { types: ['note'], ...sinceOf(query.since), ...repoCommentOrderOf(query), page });
        return renderedPage(context, result, page);
      });
    },
  );

  repoRoute(
    server,
    '/issues/events',
    routeOptions('IssueEvent', 'List issue events for a repository (newest first)', { params: RepoParams, querystring: PagingQuery }),
    async (request, reply) => {
      const context = await repoContext(deps, request, prefix, request.params);
      const page = pageOf(request.query);
      const result = await listObjects(deps.database, context.imported.id, { types: ['issue_event'], sort: 'id', direction: 'desc', page });
      // Events are stored without the issue they embed (a third of an import's bytes): GitHub embeds it as it is now, and so does this.
      const issues = await issuesByNumber(deps.database, context.imported.id, result.numbers.filter((number): number is number => number !== null));
      const withIssues = result.data.map((data, index) => {
        const issue = issues.get(result.numbers[index] ?? -1);
        const event = issueEvent(JSON.parse(data) as Record<string, unknown>);
        return JSON.stringify(issue === undefined ? event : { ...event, issue: embeddedIssue(JSON.parse(issue) as Record<string, unknown>) });
      });
      return sendPage(request, reply, context, { ...result, data: withIssues }, page);
    },
  );
}

/** One issue (or pull request's issue shape), its comments and its events. */
function perIssueRoutes(server: ApiServer, deps: RouteDeps): void {
  const prefix = server.prefix;

  repoRoute(
    server,
    '/issues/:issue_number',
    routeOptions('Issue', 'Get an issue (or a pull request\'s issue shape)', { params: IssueParams }),
    async (request, reply) => {
      const context = await repoContext(deps, request, prefix, request.params);
      const data = await objectByNumber(deps.database, context.imported.id, ISSUE_TYPES, request.params.issue_number);
      if (data === undefined) throw await missingIssue(deps, context, request.params.issue_number);
      return sendJson(request, reply, context.render(data));
    },
  );

  repoRoute(
    server,
    '/issues/:issue_number/comments',
    routeOptions('IssueComment', 'List comments of an issue or pull request (oldest first)', { params: IssueParams, querystring: CommentsQuery }),
    async (request, reply) => {
      const context = await repoContext(deps, request, prefix, request.params);
      const number = request.params.issue_number;
      return sendListAnswer(deps.database, request, reply, context, async () => {
        await requireNumber(deps, context, number);
        const page = pageOf(request.query);
        const result = await listObjects(deps.database, context.imported.id, { types: ['note'], number, ...sinceOf(request.query.since), sort: 'created_at', direction: 'asc', page });
        return renderedPage(context, result, page);
      });
    },
  );

  repoRoute(
    server,
    '/issues/:issue_number/events',
    routeOptions('IssueEvent', 'List events of an issue or pull request (oldest first)', { params: IssueParams, querystring: PagingQuery }),
    async (request, reply) => {
      const context = await repoContext(deps, request, prefix, request.params);
      const number = request.params.issue_number;
      await requireNumber(deps, context, number);
      const page = pageOf(request.query);
      const result = await listObjects(deps.database, context.imported.id, { types: ['issue_event'], number, sort: 'id', direction: 'asc', page });
      // GitHub's per-issue events do not embed the issue (the repository-wide list does).
      return sendPage(request, reply, context, result, page, issueEvent);
    },
  );
}
