import { countSelection, keysetPage, objectsByNumbers, type ObjectSelection, type OrderColumn, type StoredRow } from '../../../store/graphql-reads.js';
import { allObjects } from '../../../store/read-api.js';
import { Connection, countKept, keysetConnection, type KeysetSource, type PageArgs } from './connection.js';
import type { ImportScope, Json, RequestScope } from './context.js';
import { assigneeTest, mentionTest, milestoneTest, type JsonTest } from './lists.js';
import { IssueModel } from './models/issue.js';
import { PullRequestModel } from './models/pull-request.js';
import { parseSearch, type SearchQualifier } from './search-query.js';

/*
 * The `search(type: ISSUE, query:)` root field over one imported
 * repository (`repo:owner/name`; without it nothing matches: the copy
 * searches the repositories it holds one at a time). The issue shapes are
 * read a keyset page at a time, narrowed in SQL by the list columns (type,
 * state, labels, author, assignee, mentions, milestone, merged) and in
 * memory by the rest (negations, free text, draft, branches); a pull
 * request's result is its PullRequest, read with the page. Like GitHub, at
 * most 1,000 results are reachable; `issueCount` counts them all. Without
 * `sort:` results are newest first (GitHub's "best match" has no meaning
 * without a text index).
 */

/** The most results a search reaches, as on GitHub (`issueCount` still counts them all). */
const SEARCH_CAP = 1000;

/** The counts a search connection answers besides `issueCount`. */
export class SearchConnection<T> {
  readonly codeCount = 0;
  readonly discussionCount = 0;
  readonly repositoryCount = 0;
  readonly userCount = 0;
  readonly wikiCount = 0;

  constructor(private readonly page: Connection<T>) {}

  nodes() {
    return this.page.nodes();
  }

  edges() {
    return this.page.edges();
  }

  pageInfo() {
    return this.page.pageInfo();
  }

  issueCount() {
    return this.page.totalCount();
  }
}

const SORTS: Record<string, OrderColumn> = { created: 'created_at', updated: 'updated_at', comments: 'comments' };

const login = (user: unknown) => String((user as Json | null | undefined)?.login ?? '').toLowerCase();
const isPull = (json: Json) => json.pull_request !== undefined && json.pull_request !== null;

/** What the qualifiers ask for: the SQL selection (list columns), the order, and the tests only the JSON can answer. */
interface SearchPlan {
  selection: ObjectSelection;
  order: { column: OrderColumn; direction: 'asc' | 'desc' };
  /** Tests on the issue shape (negated qualifiers, free text, draft). */
  tests: JsonTest[];
  /** Tests on the pull request itself (branches). */
  pullTests: JsonTest[];
  /** `milestone:"title"`: the milestone whose number the selection is to have (resolved against the repository). */
  milestoneTitle?: string;
}

/** A positive qualifier the list columns answer in SQL: added to `selection`; false when it is not one. */
function sqlQualifier(selection: ObjectSelection, key: string, value: string, plan: SearchPlan): boolean {
  const lower = value.toLowerCase();
  if (key === 'label') selection.labels = [...(selection.labels ?? []), lower];
  else if (key === 'author') selection.creator = lower.replace(/^app\//, '');
  else if (key === 'assignee') selection.assignee = { is: lower };
  else if (key === 'mentions') selection.mentioned = lower;
  else if (key === 'no' && lower === 'assignee') selection.assignee = { none: true };
  else if (key === 'no' && lower === 'milestone') selection.milestone = { none: true };
  else if (key === 'milestone') plan.milestoneTitle = lower;
  else return false;
  return true;
}

/** The plan of the qualifiers and free-text terms of a search. */
function plan(qualifiers: SearchQualifier[], terms: string[]): SearchPlan {
  let types: ('issue' | 'pull_request_issue')[] = ['issue', 'pull_request_issue'];
  const states = new Set<string>();
  const selection: ObjectSelection = { types };
  const planned: SearchPlan = { selection, order: { column: 'created_at', direction: 'desc' }, tests: [], pullTests: [] };
  const add = (negated: boolean, test: JsonTest, into = planned.tests) => into.push(negated ? (json) => !test(json) : test);
  let fields = ['title', 'body'];
  for (const { key, value, negated } of qualifiers) {
    const lower = value.toLowerCase();
    if ((key === 'is' || key === 'type') && (lower === 'issue' || lower === 'pr' || lower === 'pull-request')) {
      const wanted = lower === 'issue' ? 'issue' : 'pull_request_issue';
      types = negated ? types.filter((type) => type !== wanted) : types.filter((type) => type === wanted);
    } else if ((key === 'is' || key === 'state') && (lower === 'open' || lower === 'closed')) {
      if (negated) add(true, (json) => json.state === lower);
      else states.add(lower);
    } else if (key === 'is' && (lower === 'merged' || lower === 'unmerged') && !negated) {
      // Only pull requests are either; an unmerged one is closed without being merged.
      types = types.filter((type) => type === 'pull_request_issue');
      selection.merged = lower === 'merged' ? 'merged' : 'unmerged';
      if (lower === 'unmerged') states.add('closed');
    } else if (key === 'is' && (lower === 'merged' || lower === 'unmerged')) {
      add(true, (json) => isPull(json) && json.state === 'closed' && (typeof (json.pull_request as Json).merged_at === 'string') === (lower === 'merged'));
    } else if (key === 'is' && lower === 'draft') add(negated, (json) => json.draft === true);
    else if (key === 'draft') add(negated, (json) => (json.draft === true) === (lower === 'true'));
    else if (!negated && sqlQualifier(selection, key, value, planned)) continue;
    else if (key === 'label') add(true, (json) => ((json.labels ?? []) as Json[]).some((label) => String(label.name).toLowerCase() === lower));
    else if (key === 'author') add(true, (json) => [lower, `${lower}[bot]`].includes(login(json.user)));
    else if (key === 'assignee') add(true, assigneeTest(value));
    else if (key === 'mentions') add(true, mentionTest(value));
    else if (key === 'milestone') add(true, milestoneTest(value, (m) => String(m.title).toLowerCase() === lower));
    else if (key === 'no' && lower === 'label') add(negated, (json) => ((json.labels ?? []) as Json[]).length === 0);
    else if (key === 'no' && lower === 'assignee') add(true, assigneeTest('none'));
    else if (key === 'no' && lower === 'milestone') add(true, (json) => !json.milestone);
    else if (key === 'base') add(negated, (json) => (json.base as Json | undefined)?.ref === value, planned.pullTests);
    else if (key === 'head') add(negated, (json) => (json.head as Json | undefined)?.ref === value, planned.pullTests);
    else if (key === 'in') fields = lower.split(',').filter((field) => field === 'title' || field === 'body');
    else if (key === 'sort') {
      const [field, direction] = lower.split('-');
      if (field && SORTS[field]) planned.order = { column: SORTS[field]!, direction: direction === 'asc' ? 'asc' : 'desc' };
    }
  }
  for (const term of terms) planned.tests.push((json) => fields.some((field) => String(json[field] ?? '').toLowerCase().includes(term)));
  if (planned.pullTests.length > 0) types = types.filter((type) => type === 'pull_request_issue');
  selection.types = types;
  selection.state = states.size === 1 ? ([...states][0] as 'open' | 'closed') : 'all';
  return planned;
}

/** The number of the milestone titled `title` (case-insensitive); undefined when the repository has none. */
async function milestoneNumber(scope: ImportScope, title: string): Promise<number | undefined> {
  const milestones = (await allObjects(scope.database, scope.imported.id, { types: ['milestone'] })).map((data) => JSON.parse(data) as Json);
  const found = milestones.find((milestone) => String(milestone.title).toLowerCase() === title);
  return typeof found?.number === 'number' ? found.number : undefined;
}

/** The import `repo:owner/name` names (the last such qualifier), as the reader sees it. */
async function searchedRepository(request: RequestScope, qualifiers: SearchQualifier[]): Promise<ImportScope | undefined> {
  const repo = qualifiers.filter((q) => q.key === 'repo' && !q.negated).at(-1)?.value;
  const [owner, name, ...rest] = (repo ?? '').split('/');
  if (!owner || !name || rest.length > 0) return undefined;
  return request.repository(owner, name);
}

/** `search(type:, query:, first/last, after/before)`: issues and pull requests of one imported repository. */
export async function searchIssues(request: RequestScope, args: PageArgs & { type: string; query: string }): Promise<SearchConnection<IssueModel | PullRequestModel>> {
  const { qualifiers, terms } = parseSearch(args.query);
  const scope = args.type === 'ISSUE' || args.type === 'ISSUE_ADVANCED' ? await searchedRepository(request, qualifiers) : undefined;
  const { selection, order, tests, pullTests, milestoneTitle } = plan(qualifiers, terms);
  const milestone = scope && milestoneTitle !== undefined ? await milestoneNumber(scope, milestoneTitle) : undefined;
  if (milestone !== undefined) selection.milestone = { is: milestone };
  if (!scope || selection.types.length === 0 || (milestoneTitle !== undefined && milestone === undefined)) return new SearchConnection(new Connection<IssueModel | PullRequestModel>([], [], { hasNextPage: false, hasPreviousPage: false }, () => 0));
  const { database, imported } = scope;
  const read: KeysetSource<unknown>['read'] = (bounds) => keysetPage(database, imported.id, { ...selection, ...bounds, order: order.column, direction: order.direction });
  const keep = tests.length + pullTests.length === 0 ? undefined : async (rows: StoredRow[]) => {
    const passing = rows.filter((row) => tests.every((test) => test(JSON.parse(row.data) as Json)));
    if (pullTests.length === 0) return passing;
    const pulls = await objectsByNumbers(database, imported.id, ['pull_request'], passing.map((row) => row.number ?? -1));
    return passing.filter((row) => {
      const pull = pulls.get(row.number ?? -1);
      return pull !== undefined && pullTests.every((test) => test(JSON.parse(pull) as Json));
    });
  };
  const source: KeysetSource<IssueModel | PullRequestModel> = {
    read,
    keep,
    nodes: async (rows) =>
      Promise.all(
        rows.map(async (row) => {
          const json = scope.render(row.data);
          if (row.type !== 'pull_request_issue') return new IssueModel(json, scope);
          const pull = await scope.pull(row.number ?? -1);
          return pull ? new PullRequestModel(pull, scope) : new IssueModel(json, scope);
        }),
      ),
    // The query (with the type) is everything the count depends on: the same query counts the same results until a write.
    count: () => scope.total(JSON.stringify({ search: args.type, query: args.query }), () => (keep ? countKept({ read, keep }) : countSelection(database, imported.id, selection))),
  };
  const page = await keysetConnection(source, forwardPaging(args), { cap: SEARCH_CAP });
  return new SearchConnection(page);
}

/**
 * The paging of a search: gh asks `last: N` with `after` and means the next
 * N results (GitHub's search reads `last` as a page size), so `last`
 * without `before` reads forwards.
 */
function forwardPaging(args: PageArgs): PageArgs {
  if (typeof args.last === 'number' && !args.before && typeof args.first !== 'number') return { first: args.last, after: args.after };
  return args;
}
