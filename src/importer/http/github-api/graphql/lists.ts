import { countSelection, keysetPage, type ObjectSelection, type OrderColumn, type StoredRow } from '../../../store/graphql-reads.js';
import type { Presence } from '../../../store/list-filters.js';
import { countKept, keysetConnection, type KeysetSource, type PageArgs } from './connection.js';
import type { ImportScope, Json } from './context.js';
import { IssueModel } from './models/issue.js';
import { PullRequestModel } from './models/pull-request.js';

/*
 * `repository.issues` and `repository.pullRequests`: keyset pages of the
 * import's stored objects, narrowed in SQL by the list columns (state,
 * labels, assignee, author, mentions, milestone number, base branch) and in
 * memory by what only the JSON has (the head branch without its owner, a
 * pull request's labels, a milestone's database id), a batch at a time.
 */

export type IssueOrder = { field: 'CREATED_AT' | 'UPDATED_AT' | 'COMMENTS'; direction: 'ASC' | 'DESC' };

export interface IssueListArgs extends PageArgs {
  states?: string[] | null;
  labels?: string[] | null;
  orderBy?: IssueOrder | null;
  filterBy?: {
    assignee?: string | null;
    createdBy?: string | null;
    labels?: string[] | null;
    mentioned?: string | null;
    milestone?: string | null;
    milestoneNumber?: string | null;
    since?: string | null;
    states?: string[] | null;
  } | null;
}

export interface PullListArgs extends PageArgs {
  states?: string[] | null;
  labels?: string[] | null;
  headRefName?: string | null;
  baseRefName?: string | null;
  orderBy?: IssueOrder | null;
}

const ORDER_COLUMNS: Record<IssueOrder['field'], OrderColumn> = { CREATED_AT: 'created_at', UPDATED_AT: 'updated_at', COMMENTS: 'comments' };

/** A test on one object's rendered JSON. */
export type JsonTest = (json: Json) => boolean;

const login = (user: unknown) => String((user as Json | null | undefined)?.login ?? '').toLowerCase();

/** Whether `json`'s assignees match GitHub's `assignee` filter value (`*`: any; `none`: none; else a login). */
export function assigneeTest(value: string): JsonTest {
  const wanted = value.toLowerCase();
  return (json) => {
    const logins = (Array.isArray(json.assignees) ? (json.assignees as Json[]) : json.assignee ? [json.assignee] : []).map(login);
    if (wanted === '*') return logins.length > 0;
    if (wanted === 'none') return logins.length === 0;
    return logins.includes(wanted);
  };
}

/** Whether `json`'s milestone matches (`*`: any, `none`: none, else by `match` on the milestone). */
export function milestoneTest(value: string, match: (milestone: Json) => boolean): JsonTest {
  return (json) => {
    const milestone = json.milestone as Json | null | undefined;
    if (value === '*') return Boolean(milestone);
    if (value.toLowerCase() === 'none') return !milestone;
    return Boolean(milestone) && match(milestone!);
  };
}

/** Whether the body mentions `@login` (the copy has no mention index: the body is read). */
export function mentionTest(value: string): JsonTest {
  const pattern = new RegExp(`(^|[^\\w-])@${value.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}(?![\\w-])`, 'i');
  return (json) => pattern.test(String(json.body ?? ''));
}

/** The SQL filter of an issues filter (the list columns' filters, as `/issues` has them). */
function issueFilter(filter: NonNullable<IssueListArgs['filterBy']>): Omit<ObjectSelection, 'types'> {
  const milestoneNumber = filter.milestoneNumber ? presenceOf(filter.milestoneNumber, Number) : undefined;
  return {
    ...(filter.assignee ? { assignee: presenceOf(filter.assignee, (login) => login.toLowerCase()) } : {}),
    ...(filter.createdBy ? { creator: filter.createdBy.toLowerCase() } : {}),
    ...(filter.mentioned ? { mentioned: filter.mentioned.toLowerCase() } : {}),
    ...(milestoneNumber && !('is' in milestoneNumber && !Number.isInteger(milestoneNumber.is)) ? { milestone: milestoneNumber } : {}),
    ...(filter.since ? { since: filter.since } : {}),
  };
}

/** The JSON tests of an issues filter: `milestone`, which GitHub reads as a milestone's database id (no column has it). */
function issueTests(filter: NonNullable<IssueListArgs['filterBy']>): JsonTest[] {
  return filter.milestone ? [milestoneTest(filter.milestone, (m) => String(m.id) === filter.milestone)] : [];
}

/**
 * A keyset source over `selection` in `order`, whose rows also pass `tests`
 * on their JSON, made into `model`s. `testsKey` names what the tests test
 * (with the selection, the key its remembered count is kept under).
 */
function source<T>(scope: ImportScope, selection: ObjectSelection, order: IssueOrder, tests: { tests: JsonTest[]; testsKey: unknown }, model: (json: Json) => T): KeysetSource<T> {
  const { database, imported } = scope;
  const read: KeysetSource<T>['read'] = (bounds) =>
    keysetPage(database, imported.id, { ...selection, ...bounds, order: ORDER_COLUMNS[order.field], direction: order.direction === 'DESC' ? 'desc' : 'asc' });
  const keep = tests.tests.length === 0 ? undefined : async (rows: StoredRow[]) => rows.filter((row) => {
    const json = JSON.parse(row.data) as Json;
    return tests.tests.every((test) => test(json));
  });
  return {
    read,
    keep,
    nodes: async (rows) => rows.map((row) => model(scope.render(row.data))),
    count: () => scope.total(JSON.stringify({ selection, tests: tests.testsKey }), () => (keep ? countKept({ read, keep }) : countSelection(database, imported.id, selection))),
  };
}

/** The `state` filter of GraphQL states (`OPEN` → `open`; `CLOSED` and `MERGED` are both `closed`); `all` for none or both. */
export function stateFilter(states: readonly string[] | null | undefined): 'open' | 'closed' | 'all' {
  const columns = new Set((states ?? []).map((state) => (state === 'OPEN' ? 'open' : 'closed')));
  return columns.size === 1 ? [...columns][0]! : 'all';
}

/** GitHub's `*` (any), `none`/null-like (none) or one value, as the REST filters take it. */
export function presenceOf<T>(value: string, parse: (value: string) => T): Presence<T> {
  if (value === '*') return { any: true };
  if (value.toLowerCase() === 'none') return { none: true };
  return { is: parse(value) };
}

const lowerLabels = (labels: readonly string[] | null | undefined) => (labels ?? []).map((label) => label.toLowerCase());

/** `repository.issues(...)`: in creation order unless `orderBy` says otherwise. */
export function issueConnection(scope: ImportScope, args: IssueListArgs) {
  const filter = args.filterBy ?? {};
  const states = args.states ?? filter.states;
  const selection: ObjectSelection = {
    types: ['issue'],
    state: stateFilter(states),
    labels: [...lowerLabels(args.labels), ...lowerLabels(filter.labels)],
    ...issueFilter(filter),
  };
  const order = args.orderBy ?? { field: 'CREATED_AT', direction: 'ASC' };
  const tests = { tests: issueTests(filter), testsKey: { milestone: filter.milestone ?? null } };
  return keysetConnection(source(scope, selection, order, tests, (json) => new IssueModel(json, scope)), args);
}

/** `repository.pullRequests(...)`: states (`MERGED` told from `CLOSED` by `merged_at`), labels, head and base branches. */
export function pullRequestConnection(scope: ImportScope, args: PullListArgs) {
  const states = new Set(args.states ?? []);
  const tests: JsonTest[] = [];
  // CLOSED and MERGED share the `closed` state: without OPEN, or with OPEN and CLOSED, `merged` tells them apart in SQL.
  let merged: ObjectSelection['merged'];
  if (states.size > 0 && states.has('CLOSED') !== states.has('MERGED')) {
    if (!states.has('OPEN')) merged = states.has('MERGED') ? 'merged' : 'unmerged';
    else if (states.has('CLOSED')) merged = 'unmerged';
    else tests.push((json) => json.state === 'open' || typeof json.merged_at === 'string');
  }
  if (args.headRefName) tests.push((json) => (json.head as Json | undefined)?.ref === args.headRefName);
  const labels = lowerLabels(args.labels);
  if (labels.length > 0) tests.push((json) => labels.every((name) => ((json.labels ?? []) as Json[]).some((label) => String(label.name).toLowerCase() === name)));
  const selection: ObjectSelection = { types: ['pull_request'], state: stateFilter([...states]), ...(merged ? { merged } : {}), ...(args.baseRefName ? { base: args.baseRefName } : {}) };
  const order = args.orderBy ?? { field: 'CREATED_AT', direction: 'ASC' };
  const testsKey = { states: [...states].sort(), head: args.headRefName ?? null, labels };
  return keysetConnection(source(scope, selection, order, { tests, testsKey }, (json) => new PullRequestModel(json, scope)), args);
}
