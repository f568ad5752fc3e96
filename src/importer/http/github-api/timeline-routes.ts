import { repoContext, repoRoute, routeOptions, sendItems, type ApiServer, type RepoContext, type RouteDeps } from './context.js';
import { issueEvent, missingIssue } from './issue-shapes.js';
import { offsetOf, pageOf } from './pagination.js';
import { allObjects, countObjects } from '../../store/read-api.js';
import { IssueParams, PagingQuery } from './schemas.js';
import type { StoredType } from '../../types.js';

/*
 * `GET /repos/{o}/{r}/issues/{n}/timeline`: what happened to an issue or
 * pull request, oldest first, from what the import stored of it:
 * - its issue events, as `/issues/{n}/events` gives them;
 * - its comments, each with `event: "commented"` and the author as `actor`;
 * - its reviews (pull requests), each with `event: "reviewed"` and the
 *   review's `state` in lower case, as the timeline writes it.
 * GitHub's timeline also has kinds the import does not fetch (`committed`,
 * `cross-referenced`, `line-commented`, `commit-commented`, project card
 * moves); they are not answered.
 */

const NUMBER_TYPES: readonly StoredType[] = ['issue', 'pull_request_issue', 'pull_request'];

/** A timeline entry with what orders it: its time, then its kind (events, comments, reviews), then its id. */
interface TimelineEntry {
  at: string;
  rank: number;
  id: number;
  item: Record<string, unknown>;
}

/**
 * Entries of the three kinds merged in time order. Inputs: the rendered
 * events, comments and reviews of one issue. Returns the timeline items.
 */
export function mergeTimeline(input: { events: Record<string, unknown>[]; comments: Record<string, unknown>[]; reviews: Record<string, unknown>[] }): Record<string, unknown>[] {
  const entry = (rank: number, at: unknown, item: Record<string, unknown>): TimelineEntry => ({ at: String(at ?? ''), rank, id: Number(item.id ?? 0), item });
  const entries = [
    ...input.events.map((event) => entry(0, event.created_at, event)),
    ...input.comments.map((comment) => entry(1, comment.created_at, { ...comment, event: 'commented', actor: comment.user })),
    ...input.reviews.map((review) =>
      entry(2, review.submitted_at, { ...review, event: 'reviewed', ...(typeof review.state === 'string' ? { state: review.state.toLowerCase() } : {}) }),
    ),
  ];
  entries.sort((a, b) => (a.at < b.at ? -1 : a.at > b.at ? 1 : a.rank - b.rank || a.id - b.id));
  return entries.map((e) => e.item);
}

/** The stored objects of `types` for issue `number`, rendered for this request. */
async function rendered(deps: RouteDeps, context: RepoContext, types: readonly StoredType[], number: number): Promise<Record<string, unknown>[]> {
  return (await allObjects(deps.database, context.imported.id, { types, number })).map((data) => context.render(data));
}

/** The timeline of an issue or pull request. */
export function timelineRoutes(server: ApiServer, deps: RouteDeps): void {
  const prefix = server.prefix;
  repoRoute(
    server,
    '/issues/:issue_number/timeline',
    routeOptions('TimelineEvent', 'List timeline events for an issue (events, comments, reviews; oldest first)', { params: IssueParams, querystring: PagingQuery }),
    async (request, reply) => {
      const context = await repoContext(deps, request, prefix, request.params);
      const number = request.params.issue_number;
      if ((await countObjects(deps.database, context.imported.id, { types: NUMBER_TYPES, number })) === 0) throw await missingIssue(deps, context, number);
      const [events, comments, reviews] = await Promise.all([
        rendered(deps, context, ['issue_event'], number),
        rendered(deps, context, ['note'], number),
        rendered(deps, context, ['pull_request_review'], number),
      ]);
      const all = mergeTimeline({ events: events.map(issueEvent), comments, reviews });
      const page = pageOf(request.query);
      const offset = offsetOf(page);
      return sendItems(request, reply, context, all.slice(offset, offset + page.perPage), all.length, page);
    },
  );
}
