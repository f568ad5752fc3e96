import { repoContext, repoRoute, routeOptions, sendItems, type ApiServer, type RouteDeps } from './context.js';
import { notFound } from './errors.js';
import { embeddedIssue, issueEvent, missingIssue } from './issue-shapes.js';
import { offsetOf, pageOf } from './pagination.js';
import { allObjects, labelByName, listObjects, numberedObjectByKey, objectByKey, objectByNumber } from '../../store/read-api.js';
import { sendJson } from './respond.js';
import {
  CommentParams,
  EventParams,
  IssueParams,
  LabelParams,
  MilestoneParams,
  PagingQuery,
  PullParams,
  ReleaseParams,
  ReleaseTagParams,
  RepoParams,
  ReviewParams,
} from './schemas.js';
import type { StoredType } from '../../types.js';

/*
 * The single objects of a repository, each as GitHub answers its own GET:
 * a milestone, a label, a release (by id, by tag, the latest), a comment, a
 * review comment, an event, a review; and the small lists that come out of
 * one stored object (a pull request's requested reviewers, an issue's labels).
 */

const ISSUE_SHAPES: readonly StoredType[] = ['issue', 'pull_request_issue'];

/**
 * The published release tagged `tag` (JSON text), if any: a draft has no
 * tag yet. Reads the import's releases (a repository has few; the tag is
 * only in the JSON).
 */
async function releaseByTag(deps: RouteDeps, importId: number, tag: string): Promise<string | undefined> {
  return (await allObjects(deps.database, importId, { types: ['release'] })).find((data) => {
    const release = JSON.parse(data) as { draft?: unknown; tag_name?: unknown };
    return release.draft !== true && release.tag_name === tag;
  });
}

/** Releases read per page while looking for the latest: drafts and prereleases are usually few, so one page does. */
const LATEST_PAGE = 100;

/**
 * GitHub's latest release (JSON text): the most recently created one that
 * is neither a draft nor a prerelease. Read newest first a page at a time
 * (created_at, then id, both descending: the first that qualifies is it);
 * undefined when every release is a draft or a prerelease.
 */
async function newestPublished(deps: RouteDeps, importId: number): Promise<string | undefined> {
  for (let page = 1; ; page++) {
    const result = await listObjects(deps.database, importId, { types: ['release'], sort: 'created_at', direction: 'desc', page: { page, perPage: LATEST_PAGE } });
    const found = result.data.find((data) => {
      const release = JSON.parse(data) as { draft?: unknown; prerelease?: unknown };
      return release.draft !== true && release.prerelease !== true;
    });
    if (found !== undefined) return found;
    if (page * LATEST_PAGE >= result.total) return undefined;
  }
}

/** The single-object routes of a repository's project data. */
export function objectRoutes(server: ApiServer, deps: RouteDeps): void {
  projectDataRoutes(server, deps);
  releaseRoutes(server, deps);
  conversationRoutes(server, deps);
  pullObjectRoutes(server, deps);
}

/** A milestone by number, a label by name. */
function projectDataRoutes(server: ApiServer, deps: RouteDeps): void {
  const prefix = server.prefix;
  repoRoute(server, '/milestones/:milestone_number', routeOptions('Milestone', 'Get a milestone', { params: MilestoneParams }), async (request, reply) => {
    const context = await repoContext(deps, request, prefix, request.params);
    const data = await objectByNumber(deps.database, context.imported.id, ['milestone'], request.params.milestone_number);
    if (data === undefined) throw notFound();
    return sendJson(request, reply, context.render(data));
  });
  // Fastify has decoded the name (`Help%20wanted`); GitHub compares it case-insensitively.
  repoRoute(server, '/labels/:name', routeOptions('Label', 'Get a label (by name, case-insensitive)', { params: LabelParams }), async (request, reply) => {
    const context = await repoContext(deps, request, prefix, request.params);
    const data = await labelByName(deps.database, context.imported.id, request.params.name);
    if (data === undefined) throw notFound();
    return sendJson(request, reply, context.render(data));
  });
}

/** A release by id, by tag, and the latest one. */
function releaseRoutes(server: ApiServer, deps: RouteDeps): void {
  const prefix = server.prefix;
  repoRoute(server, '/releases/latest', routeOptions('Release', 'Get the latest release', { params: RepoParams }), async (request, reply) => {
    const context = await repoContext(deps, request, prefix, request.params);
    const latest = await newestPublished(deps, context.imported.id);
    if (latest === undefined) throw notFound();
    return sendJson(request, reply, context.render(latest));
  });
  repoRoute(server, '/releases/tags/:tag', routeOptions('Release', 'Get a release by tag name', { params: ReleaseTagParams }), async (request, reply) => {
    const context = await repoContext(deps, request, prefix, request.params);
    const found = await releaseByTag(deps, context.imported.id, request.params.tag);
    if (found === undefined) throw notFound();
    return sendJson(request, reply, context.render(found));
  });
  repoRoute(server, '/releases/:release_id', routeOptions('Release', 'Get a release', { params: ReleaseParams }), async (request, reply) => {
    const context = await repoContext(deps, request, prefix, request.params);
    const data = await objectByKey(deps.database, context.imported.id, 'release', String(request.params.release_id));
    if (data === undefined) throw notFound();
    return sendJson(request, reply, context.render(data));
  });
}

/** An issue comment, an issue event (with its issue embedded), an issue's labels. */
function conversationRoutes(server: ApiServer, deps: RouteDeps): void {
  const prefix = server.prefix;
  repoRoute(server, '/issues/comments/:comment_id', routeOptions('IssueComment', 'Get an issue comment', { params: CommentParams }), async (request, reply) => {
    const context = await repoContext(deps, request, prefix, request.params);
    const data = await objectByKey(deps.database, context.imported.id, 'note', String(request.params.comment_id));
    if (data === undefined) throw notFound();
    return sendJson(request, reply, context.render(data));
  });
  repoRoute(server, '/issues/events/:event_id', routeOptions('IssueEvent', 'Get an issue event', { params: EventParams }), async (request, reply) => {
    const context = await repoContext(deps, request, prefix, request.params);
    const id = context.imported.id;
    const event = await numberedObjectByKey(deps.database, id, 'issue_event', String(request.params.event_id));
    if (event === undefined) throw notFound();
    // Stored without its issue (see the repository-wide list): embedded as it is now, as GitHub does.
    const issue = event.number === null ? undefined : await objectByNumber(deps.database, id, ISSUE_SHAPES, event.number);
    const answer = issueEvent(context.render(event.data));
    return sendJson(request, reply, issue === undefined ? answer : { ...answer, issue: embeddedIssue(context.render(issue)) });
  });
  repoRoute(
    server,
    '/issues/:issue_number/labels',
    routeOptions('Label', 'List labels for an issue', { params: IssueParams, querystring: PagingQuery }),
    async (request, reply) => {
      const context = await repoContext(deps, request, prefix, request.params);
      const number = request.params.issue_number;
      const data = await objectByNumber(deps.database, context.imported.id, ISSUE_SHAPES, number);
      if (data === undefined) throw await missingIssue(deps, context, number);
      const labels = context.render(data).labels;
      const all = Array.isArray(labels) ? labels : [];
      const page = pageOf(request.query);
      const offset = offsetOf(page);
      return sendItems(request, reply, context, all.slice(offset, offset + page.perPage), all.length, page);
    },
  );
}

/** A review comment, a review, a pull request's requested reviewers. */
function pullObjectRoutes(server: ApiServer, deps: RouteDeps): void {
  const prefix = server.prefix;
  repoRoute(
    server,
    '/pulls/comments/:comment_id',
    routeOptions('PullRequestReviewComment', 'Get a review comment for a pull request', { params: CommentParams }),
    async (request, reply) => {
      const context = await repoContext(deps, request, prefix, request.params);
      const data = await objectByKey(deps.database, context.imported.id, 'diff_note', String(request.params.comment_id));
      if (data === undefined) throw notFound();
      return sendJson(request, reply, context.render(data));
    },
  );
  // Below its own pull request only, as on GitHub.
  repoRoute(
    server,
    '/pulls/:pull_number/reviews/:review_id',
    routeOptions('PullRequestReview', 'Get a review for a pull request', { params: ReviewParams }),
    async (request, reply) => {
      const context = await repoContext(deps, request, prefix, request.params);
      const review = await numberedObjectByKey(deps.database, context.imported.id, 'pull_request_review', String(request.params.review_id));
      if (review === undefined || review.number !== request.params.pull_number) throw notFound();
      return sendJson(request, reply, context.render(review.data));
    },
  );
  // The requests as the stored pull request lists them (GitHub drops a request once its review is given).
  repoRoute(
    server,
    '/pulls/:pull_number/requested_reviewers',
    routeOptions('PullRequestReviewRequest', 'Get all requested reviewers for a pull request', { params: PullParams }),
    async (request, reply) => {
      const context = await repoContext(deps, request, prefix, request.params);
      const data = await objectByNumber(deps.database, context.imported.id, ['pull_request'], request.params.pull_number);
      if (data === undefined) throw notFound();
      const pull = context.render(data);
      const listed = (value: unknown) => (Array.isArray(value) ? value : []);
      return sendJson(request, reply, { users: listed(pull.requested_reviewers), teams: listed(pull.requested_teams) });
    },
  );
}
