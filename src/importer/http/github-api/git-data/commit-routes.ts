import { repoRoute, routeOptions, type ApiServer, type RepoLocator } from '../context.js';
import { GithubApiError, notFound } from '../errors.js';
import { offsetOf, pageOf, type Page } from '../pagination.js';
import { sendJson } from '../respond.js';
import { normaliseSince, RepoParams } from '../schemas.js';
import { isObjectId, validateTreePath } from '../../../../snapshots/api.js';
import { commitDetail, commitItem, diffEntry, gitCommit } from './payloads.js';
import { commitItems, rangeCommits, rangeFiles, rangeOf } from './ranges.js';
import { openGitData } from './request.js';
import type { GitDataDeps, GitDataRequest } from './request.js';
import { CommitShaParams, CommitsQuery, WildcardParams } from './schemas.js';
import { missing } from './source.js';

/** A request's URL (path and query) with the repository named by id (`/repositories/<id>/…`), as GitHub's `Link` headers for git data name it. */
export function byIdUrl(requestUrl: string, repositoryId: number): string {
  return requestUrl.replace(/\/repos\/[^/?]+\/[^/?]+(?=\/)/, `/repositories/${repositoryId}`);
}

/**
 * GitHub's `Link` header for a list whose end is not counted (a history
 * page reads only up to itself): `prev`, `next` when there is more, `first`
 * — no `last`. Its URLs name the repository by id (`/repositories/<id>/…`),
 * as GitHub's do.
 */
export function openEndedLinks(origin: string, requestUrl: string, repositoryId: number, page: Page, hasNext: boolean): string | undefined {
  const at = requestUrl.indexOf('?');
  const path = byIdUrl(at < 0 ? requestUrl : requestUrl.slice(0, at), repositoryId);
  const params = new URLSearchParams(at < 0 ? '' : requestUrl.slice(at + 1));
  const link = (number: number, rel: string) => {
    params.set('page', String(number));
    return `<${origin}${path}?${params.toString()}>; rel="${rel}"`;
  };
  const parts: string[] = [];
  if (page.page > 1) parts.push(link(page.page - 1, 'prev'));
  if (hasNext) parts.push(link(page.page + 1, 'next'));
  if (page.page > 1) parts.push(link(1, 'first'));
  return parts.length > 0 ? parts.join(', ') : undefined;
}

/** Whether `path` is a path inside a tree (validateTreePath takes it). */
function isTreePath(path: string): boolean {
  try {
    validateTreePath(path);
    return true;
  } catch {
    return false;
  }
}

/** `since`/`until` as git takes them (whole seconds, UTC). */
function gitTime(value: string | undefined): string | undefined {
  return value === undefined ? undefined : normaliseSince(value);
}

/** Commits: the history of a ref, one commit, a comparison, and commit objects. */
export function commitRoutes(server: ApiServer, deps: GitDataDeps): void {
  const prefix = server.prefix;

  repoRoute(server, '/commits', routeOptions('Commit', 'List commits', { params: RepoParams, querystring: CommitsQuery }), async (request, reply) => {
    const gitData = await openGitData(deps, request, reply, prefix, request.params);
    if (!gitData) return reply;
    const { git, repo, context } = gitData;
    const query = request.query;
    const page = pageOf(query);
    const start = await git.commitNamed(query.sha ?? gitData.defaultBranch);
    if (start === undefined) throw await missing(git, new GithubApiError(404, 'Not Found'));
    // A path no commit can touch (`../x`, an absolute one) has no history.
    if (query.path !== undefined && !isTreePath(query.path)) return sendJson(request, reply, []);
    // One more than the page: whether there is a next one, without reading the history beyond it.
    const shas = await git.history({
      start,
      path: query.path,
      author: query.author,
      committer: query.committer,
      since: gitTime(query.since),
      until: gitTime(query.until),
      skip: offsetOf(page),
      maxCount: page.perPage + 1,
    });
    const items = await commitItems(gitData, shas.slice(0, page.perPage));
    return sendJson(request, reply, items, openEndedLinks(context.origin, request.url, repo.id, page, shas.length > page.perPage));
  });

  repoRoute(server, '/commits/*', routeOptions('Commit', 'Get a commit', { params: WildcardParams('a branch, tag or sha') }), async (request, reply) => {
    const gitData = await openGitData(deps, request, reply, prefix, request.params);
    if (!gitData) return reply;
    const { git, repo, userOf } = gitData;
    const ref = request.params['*'];
    const sha = await git.commitNamed(ref);
    const commit = sha === undefined ? undefined : await git.commit(sha);
    if (!commit) throw await missing(git, new GithubApiError(422, `No commit found for SHA: ${ref}`));
    return sendJson(request, reply, await commitDetail(repo, commit, await git.changes(commit.parents[0], commit.sha), userOf));
  });

  repoRoute(server, '/compare/*', routeOptions('Commit', 'Compare two commits', { params: WildcardParams('`<base>...<head>`') }), async (request, reply) => {
    const gitData = await openGitData(deps, request, reply, prefix, request.params);
    if (!gitData) return reply;
    return sendJson(request, reply, await comparison(gitData, request.params['*']));
  });

  repoRoute(server, '/git/commits/:commit_sha', routeOptions('Commit', 'Get a commit object', { params: CommitShaParams }), async (request, reply) => {
    const gitData = await openGitData(deps, request, reply, prefix, request.params);
    if (!gitData) return reply;
    const sha = request.params.commit_sha.toLowerCase();
    const commit = isObjectId(sha) ? await gitData.git.commit(sha) : undefined;
    if (!commit) throw await missing(gitData.git);
    return sendJson(request, reply, gitCommit(gitData.repo, commit));
  });
}

/**
 * `/compare/{base}...{head}`: where the two stand (GitHub's `status`,
 * `ahead_by`, `behind_by`), the commits on the head's side (oldest first, at
 * most 250), and the files changed from their merge base to the head.
 * @throws GithubApiError 404 for a malformed pair, an unknown side, or histories without a common ancestor
 */
async function comparison(gitData: GitDataRequest, basehead: string): Promise<Record<string, unknown>> {
  const { git, repo, userOf } = gitData;
  const [baseRef, headRef, extra] = basehead.split('...');
  if (!baseRef || !headRef || extra !== undefined) throw notFound();
  const [base, head] = await Promise.all([git.commitNamed(baseRef), git.commitNamed(headRef)]);
  if (base === undefined || head === undefined) throw await missing(git);
  const range = await rangeOf(git, base, head);
  if (range === undefined) throw new GithubApiError(404, `No common ancestor between ${baseRef} and ${headRef}.`);
  const [ahead, behind, baseCommit, mergeBaseCommit, files] = await Promise.all([
    rangeCommits(git, range),
    git.count(head, base),
    git.commit(base),
    git.commit(range.mergeBase),
    rangeFiles(git, range),
  ]);
  const status = ahead.total === 0 && behind === 0 ? 'identical' : behind === 0 ? 'ahead' : ahead.total === 0 ? 'behind' : 'diverged';
  const web = `${repo.web}/compare/${basehead}`;
  return {
    url: `${repo.api}/compare/${basehead}`,
    html_url: web,
    permalink_url: `${repo.web}/compare/${repo.owner}:${base}...${repo.owner}:${head}`,
    diff_url: `${web}.diff`,
    patch_url: `${web}.patch`,
    base_commit: await commitItem(repo, baseCommit!, userOf),
    merge_base_commit: await commitItem(repo, mergeBaseCommit!, userOf),
    status,
    ahead_by: ahead.total,
    behind_by: behind,
    total_commits: ahead.total,
    commits: await commitItems(gitData, ahead.shas),
    files: files.map((file) => diffEntry(repo, head, file)),
  };
}
