import type { Presence } from '../../store/list-filters.js';
import type { Direction, ListRequest, SortKey } from '../../store/read-api.js';

/*
 * GitHub's list query parameters (validated by schemas.ts) as the store's
 * list filters and orders (read-api.ts, list-filters.ts): what each
 * documented filter means, in one place per list, so the route handlers only
 * read and answer.
 */

/** `milestone=` / `assignee=`: `*` any, `none` none, else the value itself. */
function presenceOf<T>(value: string | undefined, parse: (text: string) => T): Presence<T> | undefined {
  if (value === undefined) return undefined;
  if (value === '*') return { any: true };
  if (value === 'none') return { none: true };
  return { is: parse(value) };
}

/** The milestone number `milestone=` names (it must exist: GitHub answers 422 otherwise), if it names one. */
export function milestoneNumberOf(query: { milestone?: string | undefined }): number | undefined {
  return query.milestone === undefined || query.milestone === '*' || query.milestone === 'none' ? undefined : Number(query.milestone);
}

const ISSUE_SORTS: Record<'created' | 'updated' | 'comments', SortKey> = { created: 'created_at', updated: 'updated_at', comments: 'comments' };

/** `/issues`' filters and order (without types and page): every filter GitHub documents, logins compared lower-cased. */
export function issueListOf(query: {
  state: 'open' | 'closed' | 'all';
  sort: 'created' | 'updated' | 'comments';
  direction: Direction;
  milestone?: string | undefined;
  assignee?: string | undefined;
  creator?: string | undefined;
  mentioned?: string | undefined;
}): Omit<ListRequest, 'types' | 'page'> {
  const milestone = presenceOf(query.milestone, Number);
  const assignee = presenceOf(query.assignee, (login) => login.toLowerCase());
  return {
    state: query.state,
    sort: ISSUE_SORTS[query.sort],
    direction: query.direction,
    ...(milestone ? { milestone } : {}),
    ...(assignee ? { assignee } : {}),
    ...(query.creator !== undefined ? { creator: query.creator.toLowerCase() } : {}),
    ...(query.mentioned !== undefined ? { mentioned: query.mentioned.toLowerCase() } : {}),
  };
}

/** The time one calendar month before `now` (ISO, whole seconds): `long-running`'s bound. */
function monthBefore(now: Date): string {
  const date = new Date(now.getTime());
  date.setUTCMonth(date.getUTCMonth() - 1);
  return date.toISOString().replace(/\.\d{3}Z$/, 'Z');
}

/**
 * `/pulls`' filters and order (without types and page). `head=owner:ref`
 * matches `head.label` with the owner in any case (a head without its owner
 * is ignored, as GitHub ignores it); `popularity` orders by the comment count,
 * `long-running` keeps the pull requests (of `state`: open ones by default)
 * created more than a month before `now` and updated since then, by creation; `direction` defaults to
 * `desc` for `created` only, as GitHub's does.
 */
export function pullListOf(
  query: { state: 'open' | 'closed' | 'all'; head?: string | undefined; base?: string | undefined; sort: 'created' | 'updated' | 'popularity' | 'long-running'; direction?: Direction | undefined },
  now: Date,
): Omit<ListRequest, 'types' | 'page'> {
  const colon = query.head?.indexOf(':') ?? -1;
  const head = query.head !== undefined && colon > 0 ? query.head.slice(0, colon).toLowerCase() + query.head.slice(colon) : undefined;
  const direction = query.direction ?? (query.sort === 'created' ? 'desc' : 'asc');
  const month = monthBefore(now);
  const longRunning = query.sort === 'long-running' ? { createdBefore: month, since: month } : {};
  const sort: SortKey = query.sort === 'updated' ? 'updated_at' : query.sort === 'popularity' ? 'comments' : 'created_at';
  return { state: query.state, ...longRunning, sort, direction, ...(head !== undefined ? { head } : {}), ...(query.base !== undefined ? { base: query.base } : {}) };
}

/** The order of a repository's issue comments: by creation, oldest first, unless `sort` is given (GitHub ignores `direction` without it). */
export function repoCommentOrderOf(query: { sort?: 'created' | 'updated' | undefined; direction: Direction }): Pick<ListRequest, 'sort' | 'direction'> {
  return query.sort === undefined ? { sort: 'created_at', direction: 'asc' } : commentOrderOf(query);
}

/** The order of review comment lists: by id unless `sort` is given (GitHub ignores `direction` without it). */
export function commentOrderOf(query: { sort?: 'created' | 'updated' | 'created_at' | undefined; direction: Direction }): Pick<ListRequest, 'sort' | 'direction'> {
  if (query.sort === undefined) return { sort: 'id', direction: 'asc' };
  return { sort: query.sort === 'updated' ? 'updated_at' : 'created_at', direction: query.direction };
}
