import type { FastifyRequest } from 'fastify';
import { DOCUMENTATION_URL } from './errors.js';

/*
 * Where GitHub's error bodies point (`documentation_url`): the page of the
 * operation that was asked for, as GitHub links it (`…/rest/issues/issues#get-an-issue`
 * for a missing issue, `…#list-issue-comments` for the comments of one).
 */

/** The documentation page of each repository route, by its path after `/repos/{owner}/{repo}` (Fastify's pattern). */
const REPOSITORY_ROUTE_DOCS: Record<string, string> = {
  '': 'repos/repos#get-a-repository',
  '/issues': 'issues/issues#list-repository-issues',
  '/issues/comments': 'issues/comments#list-issue-comments-for-a-repository',
  '/issues/comments/:comment_id': 'issues/comments#get-an-issue-comment',
  '/issues/events': 'issues/events#list-issue-events-for-a-repository',
  '/issues/events/:event_id': 'issues/events#get-an-issue-event',
  '/issues/:issue_number': 'issues/issues#get-an-issue',
  '/issues/:issue_number/comments': 'issues/comments#list-issue-comments',
  '/issues/:issue_number/events': 'issues/events#list-issue-events',
  '/issues/:issue_number/labels': 'issues/labels#list-labels-for-an-issue',
  '/issues/:issue_number/timeline': 'issues/timeline#list-timeline-events-for-an-issue',
  '/pulls': 'pulls/pulls#list-pull-requests',
  '/pulls/comments': 'pulls/comments#list-review-comments-in-a-repository',
  '/pulls/comments/:comment_id': 'pulls/comments#get-a-review-comment-for-a-pull-request',
  '/pulls/:pull_number': 'pulls/pulls#get-a-pull-request',
  '/pulls/:pull_number/comments': 'pulls/comments#list-review-comments-on-a-pull-request',
  '/pulls/:pull_number/reviews': 'pulls/reviews#list-reviews-for-a-pull-request',
  '/pulls/:pull_number/reviews/:review_id': 'pulls/reviews#get-a-review-for-a-pull-request',
  '/pulls/:pull_number/requested_reviewers': 'pulls/review-requests#get-all-requested-reviewers-for-a-pull-request',
  '/pulls/:pull_number/commits': 'pulls/pulls#list-commits-on-a-pull-request',
  '/pulls/:pull_number/files': 'pulls/pulls#list-pull-requests-files',
  '/labels': 'issues/labels#list-labels-for-a-repository',
  '/labels/:name': 'issues/labels#get-a-label',
  '/milestones': 'issues/milestones#list-milestones',
  '/milestones/:milestone_number': 'issues/milestones#get-a-milestone',
  '/releases': 'releases/releases#list-releases',
  '/releases/latest': 'releases/releases#get-the-latest-release',
  '/releases/:release_id': 'releases/releases#get-a-release',
  '/releases/tags/:tag': 'releases/releases#get-a-release-by-tag-name',
  '/collaborators': 'collaborators/collaborators#list-repository-collaborators',
  '/branches/:branch/protection': 'branches/branch-protection#get-branch-protection',
  '/branches/*': 'branches/branch-protection#get-branch-protection',
  // The git data (git-data/).
  '/branches': 'branches/branches#list-branches',
  '/branches/:branch': 'branches/branches#get-a-branch',
  '/tags': 'repos/repos#list-repository-tags',
  '/commits': 'commits/commits#list-commits',
  '/commits/*': 'commits/commits#get-a-commit',
  '/compare/*': 'commits/commits#compare-two-commits',
  '/git/refs': 'git/refs#list-matching-references',
  '/git/refs/*': 'git/refs#list-matching-references',
  '/git/matching-refs/*': 'git/refs#list-matching-references',
  '/git/ref/*': 'git/refs#get-a-reference',
  '/git/commits/:commit_sha': 'git/commits#get-a-commit-object',
  '/git/trees/:tree_sha': 'git/trees#get-a-tree',
  '/git/blobs/:file_sha': 'git/blobs#get-a-blob',
  '/contents': 'repos/contents#get-repository-content',
  '/contents/*': 'repos/contents#get-repository-content',
  '/readme': 'repos/contents#get-a-repository-readme',
  '/readme/*': 'repos/contents#get-a-repository-readme-for-a-directory',
  '/tarball/*': 'repos/contents#download-a-repository-archive-tar',
  '/zipball/*': 'repos/contents#download-a-repository-archive-zip',
};

/** The documentation of the other routes, by their path after the API prefix. */
const OTHER_ROUTE_DOCS: Record<string, string> = {
  '/users/:username': 'users/users#get-a-user',
};

/** Where a repository route's pattern reaches the repository (after the plugin's prefix). */
const REPOSITORY_PATTERN = /\/(?:repos\/:owner\/:repo|repositories\/:repository_id)(?=\/|$)/;

/**
 * The `documentation_url` of an error answered to `request`: its route's
 * page, found by the route's pattern (routeOptions.url, the plugin's
 * prefix before it); GitHub's REST root when the route has none listed or
 * no route matched.
 */
export function documentationUrlOf(request: FastifyRequest): string {
  const pattern = request.routeOptions.url;
  if (pattern === undefined) return DOCUMENTATION_URL;
  const inRepository = REPOSITORY_PATTERN.exec(pattern);
  const page = inRepository
    ? REPOSITORY_ROUTE_DOCS[pattern.slice(inRepository.index + inRepository[0].length)]
    : Object.entries(OTHER_ROUTE_DOCS).find(([path]) => pattern.endsWith(path))?.[1];
  return page === undefined ? DOCUMENTATION_URL : `${DOCUMENTATION_URL}/${page}`;
}
