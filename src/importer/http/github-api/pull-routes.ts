import type { StoredType } from '../../types.js';
import { repoContext, repoRoute, routeOptions, sendPage, type ApiServer, type RouteDeps } from './context.js';
import { notFound } from './errors.js';
import { pullListOf } from './list-queries.js';
import { renderedPage, sendItemsOf, sendListAnswer } from './list-answers.js';
import { pageOf } from './pagination.js';
import { countObjects, listObjects, objectByNumber, type ListRequest } from '../../store/read-api.js';
import { sendJson } from './respond.js';
import { PagingQuery, PullParams, PullsQuery, RepoParams, ReviewCommentsQuery, normaliseSince } from './schemas.js';

const PULL: readonly StoredType[] = ['pull_request'];

/** The order of review comments: by id unless `sort` is given (GitHub ignores `direction` without it). */
function reviewCommentOrder(query: { sort?: 'created' | 'updated' | 'created_at' | undefined; direction: 'asc' | 'desc'; since?: string | undefined }) {
  const since = query.since === undefined ? undefined : normaliseSince(query.since);
  const order: Pick<ListRequest, 'sort' | 'direction'> =
    query.sort === undefined
      ? { sort: 'id', direction: 'asc' }
      : { sort: query.sort === 'updated' ? 'updated_at' : 'created_at', direction: query.direction };
  return { ...order, ...(since === undefined ? {} : { since }) };
}

/**
 * The single pull request as `GET /pulls/{n}` gives it, from the stored
 * list item: `comments` and `review_comments` counted from what was
 * imported and `merged` from `merged_at` when the item lacks them; the rest
 * (`commits`, `additions`, `mergeable`, …) stays as stored.
 */
export function completePull(pull: Record<string, unknown>, counts: { comments: number; reviewComments: number }): Record<string, unknown> {
  return {
    ...pull,
    // GitHub's single pull request always has it: null until merged (and when the merge's author is not known).
    merged_by: pull.merged_by ?? null,
    merged: typeof pull.merged === 'boolean' ? pull.merged : pull.merged_at !== null && pull.merged_at !== undefined,
    comments: typeof pull.comments === 'number' ? pull.comments : counts.comments,
    review_comments: typeof pull.review_comments === 'number' ? pull.review_comments : counts.reviewComments,
  };
}

/** The fields only GitHub's single pull request (`GET /pulls/{n}`) has: its list items lack them. */
const SINGLE_PULL_FIELDS = [
  'merged', 'mergeable', 'rebaseable', 'mergeable_state', 'merged_by', 'comments', 'review_comments',
  'maintainer_can_modify', 'commits', 'additions', 'deletions', 'changed_files',
] as const;

/** A pull request as `GET /pulls` lists it, from whatever is stored (the list item, or the single object the importer fetched). */
export function listedPull(pull: Record<string, unknown>): Record<string, unknown> {
  const listed = { ...pull };
  for (const field of SINGLE_PULL_FIELDS) delete listed[field];
  return listed;
}

/** Pull requests, their reviews and review comments. */
export function pullRoutes(server: ApiServer, deps: RouteDeps): void {
  const prefix = server.prefix;

  repoRoute(
    server,
    '/pulls',
    routeOptions('PullRequest', 'List pull requests', { params: RepoParams, querystring: PullsQuery }),
    async (request, reply) => {
      const context = await repoContext(deps, request, prefix, request.params);
      const query = request.query;
      const compute = async () => {
        const page = pageOf(query);
        return renderedPage(context, await listObjects(deps.database, context.imported.id, { types: PULL, ...pullListOf(query, new Date()), page }), page, listedPull);
      };
      // `long-running` depends on the time too: its answers are not remembered.
      if (query.sort === 'long-running') return sendItemsOf(request, reply, context, await compute());
      return sendListAnswer(deps.database, request, reply, context, compute);
    },
  );

  repoRoute(
    server,
    '/pulls/comments',
    routeOptions('PullRequestReviewComment', 'List review comments in a repository', { params: RepoParams, querystring: ReviewCommentsQuery }),
    async (request, reply) => {
      const context = await repoContext(deps, request, prefix, request.params);
      const page = pageOf(request.query);
      const result = await listObjects(deps.database, context.imported.id, { types: ['diff_note'], ...reviewCommentOrder(request.query), page });
      return sendPage(request, reply, context, result, page);
    },
  );

  repoRoute(
    server,
    '/pulls/:pull_number',
    routeOptions('PullRequest', 'Get a pull request', { params: PullParams }),
    async (request, reply) => {
      const context = await repoContext(deps, request, prefix, request.params);
      const number = request.params.pull_number;
      const id = context.imported.id;
      const data = await objectByNumber(deps.database, id, PULL, number);
      if (data === undefined) throw notFound();
      const [comments, reviewComments] = await Promise.all([
        countObjects(deps.database, id, { types: ['note'], number }),
        countObjects(deps.database, id, { types: ['diff_note'], number }),
      ]);
      return sendJson(request, reply, completePull(context.render(data), { comments, reviewComments }));
    },
  );

  repoRoute(
    server,
    '/pulls/:pull_number/reviews',
    routeOptions('PullRequestReview', 'List reviews of a pull request (oldest first)', { params: PullParams, querystring: PagingQuery }),
    async (request, reply) => {
      const context = await repoContext(deps, request, prefix, request.params);
      const number = request.params.pull_number;
      if ((await countObjects(deps.database, context.imported.id, { types: PULL, number })) === 0) throw notFound();
      const page = pageOf(request.query);
      const result = await listObjects(deps.database, context.imported.id, { types: ['pull_request_review'], number, sort: 'id', direction: 'asc', page });
      return sendPage(request, reply, context, result, page);
    },
  );

  repoRoute(
    server,
    '/pulls/:pull_number/comments',
    routeOptions('PullRequestReviewComment', 'List review comments of a pull request', { params: PullParams, querystring: ReviewCommentsQuery }),
    async (request, reply) => {
      const context = await repoContext(deps, request, prefix, request.params);
      const number = request.params.pull_number;
      if ((await countObjects(deps.database, context.imported.id, { types: PULL, number })) === 0) throw notFound();
      const page = pageOf(request.query);
      const result = await listObjects(deps.database, context.imported.id, { types: ['diff_note'], number, ...reviewCommentOrder(request.query), page });
      return sendPage(request, reply, context, result, page);
    },
  );
}
