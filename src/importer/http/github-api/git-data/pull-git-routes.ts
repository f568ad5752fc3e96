import type { FastifyReply, FastifyRequest } from 'fastify';
import { repoRoute, routeOptions, type ApiServer } from '../context.js';
import { notFound } from '../errors.js';
import { linkHeader, offsetOf, pageOf, type Page } from '../pagination.js';
import { sendJson } from '../respond.js';
import { PagingQuery, PullParams } from '../schemas.js';
import { objectByNumber } from '../../../store/read-api.js';
import { byIdUrl } from './commit-routes.js';
import { diffEntry } from './payloads.js';
import { commitItems, rangeCommits, rangeFiles, rangeOf, type CommitRange } from './ranges.js';
import { openGitData, type GitDataDeps, type GitDataRequest } from './request.js';
import { missing } from './source.js';

/** The most files GitHub lists for a pull request. */
const MAX_PULL_FILES = 3000;

/**
 * The commits a pull request compares, from the mirror: its head
 * (`refs/pull/<n>/head`, which the mirror keeps for every pull request) and
 * its base (the stored pull request's `base.sha`), with their merge base.
 * @throws GithubApiError 404 when the import has no such pull request (an
 * issue's number included), or when either commit is not in the mirror
 * (409 when the repository is empty), as for any unknown commit
 */
async function pullRange(deps: GitDataDeps, gitData: GitDataRequest, number: number): Promise<CommitRange> {
  const { git } = gitData;
  const stored = await objectByNumber(deps.database, gitData.context.imported.id, ['pull_request'], number);
  if (stored === undefined) throw notFound();
  const baseSha = (JSON.parse(stored) as { base?: { sha?: unknown } }).base?.sha;
  const [base, head] = await Promise.all([
    typeof baseSha === 'string' ? git.commitNamed(baseSha) : undefined,
    git.commitNamed(`refs/pull/${number}/head`),
  ]);
  if (base === undefined || head === undefined) throw await missing(git);
  const range = await rangeOf(git, base, head);
  if (range === undefined) throw notFound();
  return range;
}

/** Answers `items`, page `page` of a list of `total`, with GitHub's `Link` header naming the repository by id (as GitHub's do for these lists). */
function sendPullPage(request: FastifyRequest, reply: FastifyReply, gitData: GitDataRequest, items: unknown[], total: number, page: Page): FastifyReply {
  return sendJson(request, reply, items, linkHeader(gitData.context.origin, byIdUrl(request.url, gitData.repo.id), page, total));
}

/**
 * A pull request's commits and changed files, as GitHub lists them, read
 * from the mirror with the comparison's machinery (ranges.ts): the commits
 * on the head's side of its base (oldest first, at most 250) and the files
 * changed from their merge base to the head (at most 3000), a page at a time.
 */
export function pullGitRoutes(server: ApiServer, deps: GitDataDeps): void {
  const prefix = server.prefix;

  repoRoute(
    server,
    '/pulls/:pull_number/commits',
    routeOptions('PullRequest', 'List commits on a pull request (oldest first, at most 250)', { params: PullParams, querystring: PagingQuery }),
    async (request, reply) => {
      const gitData = await openGitData(deps, request, reply, prefix, request.params);
      if (!gitData) return reply;
      const range = await pullRange(deps, gitData, request.params.pull_number);
      const { shas } = await rangeCommits(gitData.git, range);
      const page = pageOf(request.query);
      const offset = offsetOf(page);
      const items = await commitItems(gitData, shas.slice(offset, offset + page.perPage));
      return sendPullPage(request, reply, gitData, items, shas.length, page);
    },
  );

  repoRoute(
    server,
    '/pulls/:pull_number/files',
    routeOptions('PullRequest', 'List pull request files (at most 3000)', { params: PullParams, querystring: PagingQuery }),
    async (request, reply) => {
      const gitData = await openGitData(deps, request, reply, prefix, request.params);
      if (!gitData) return reply;
      const range = await pullRange(deps, gitData, request.params.pull_number);
      const files = (await rangeFiles(gitData.git, range)).slice(0, MAX_PULL_FILES);
      const page = pageOf(request.query);
      const offset = offsetOf(page);
      const items = files.slice(offset, offset + page.perPage).map((file) => diffEntry(gitData.repo, range.head, file));
      return sendPullPage(request, reply, gitData, items, files.length, page);
    },
  );
}
