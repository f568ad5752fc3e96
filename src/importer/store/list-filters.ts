import { sql, type ExpressionBuilder, type Expression, type SqlBool } from 'kysely';
import type { Database } from '../../store/database.js';
import type { Schema } from '../../store/types.js';
import type { StoredType } from '../types.js';

/*
 * The conditions of the GitHub-compatible API's list filters, as SQL on the
 * list columns (migration 020, store/import-list-columns.ts): equality on indexed
 * columns (`milestone`, `author`, `head_label`, `base_ref`, `state`) and,
 * for the many-valued ones (`labels`, `assignees`, `mentions`, and a
 * collaborator's permissions kept in `labels`), an exact
 * substring match of `\nname\n` — walked along the index of the order
 * asked for, never a parse of the JSON.
 */

/** `*` (any value), `none` (no value), or one value: GitHub's `milestone=` and `assignee=`. */
export type Presence<T> = { any: true } | { none: true } | { is: T };

/** Which stored objects a list holds. */
export interface ListFilter {
  types: readonly StoredType[];
  /** Only objects of this issue / PR / milestone number. */
  number?: number;
  /** `open` or `closed` (the `state` column); `all` or unset: either. */
  state?: 'open' | 'closed' | 'all';
  /** Lower-cased label names that must all be present. */
  labels?: readonly string[];
  /** `updated_at >= since`, an ISO 8601 time in GitHub's form (`…T12:00:00Z`). */
  since?: string;
  /** Issues: the milestone's number, any milestone, or none. */
  milestone?: Presence<number>;
  /** Issues: one of the assignees (lower-cased login), any assignee, or none. */
  assignee?: Presence<string>;
  /** Issues: the author's lower-cased login. */
  creator?: string;
  /** Issues: a lower-cased login @-mentioned in the body or in one of its comments. */
  mentioned?: string;
  /** Pulls: `head.label` with the owner lower-cased (`acme:feature`). */
  head?: string;
  /** Pulls: `base.ref`. */
  base?: string;
  /** Only what was created before this ISO time (pulls' `long-running`). */
  createdBefore?: string;
  /** Collaborators: only those a `/collaborators?affiliation=` list of this value gave (a `collaborator_direct|outside` mark of the same key). */
  affiliation?: 'direct' | 'outside';
  /** Collaborators: only those whose `permissions` grant this one (kept in `labels`, `\npull\ntriage\n…`). */
  permission?: string;
}

type Builder = ExpressionBuilder<Schema, 'import_objects'>;
type Dialect = Database['dialect'];

/** `column` contains `needle` (an exact substring: no LIKE patterns to escape). */
function contains(dialect: Dialect, column: 'labels' | 'assignees' | 'mentions', needle: string): Expression<SqlBool> {
  return dialect === 'postgres' ? sql<SqlBool>`strpos(${sql.ref(column)}, ${needle}) > 0` : sql<SqlBool>`instr(${sql.ref(column)}, ${needle}) > 0`;
}

/** The `listed_as` values of `types` (a pull request's issue shape is listed with the issues). */
export function listedAs(types: readonly StoredType[]): string[] {
  return [...new Set(types.map((type) => (type === 'pull_request_issue' ? 'issue' : type)))];
}

/** Whether `types` is all of its lists (then `listed_as` alone selects them, through the list indexes). */
function wholeLists(types: readonly StoredType[]): boolean {
  const listed = listedAs(types);
  return listed.every((list) => (list === 'issue' ? types.includes('issue') && types.includes('pull_request_issue') : types.includes(list as StoredType)));
}

function presence<T extends string | number>(eb: Builder, present: Presence<T>, whenIs: (value: T) => Expression<SqlBool>, column: 'milestone' | 'assignees'): Expression<SqlBool> {
  if ('any' in present) return eb(column, 'is not', null);
  if ('none' in present) return eb(column, 'is', null);
  return whenIs(present.is);
}

/**
 * The WHERE of a list: the import's rows of `filter.types` (by `listed_as`,
 * the leading column of every list index, when the types are whole lists)
 * and every filter given. Inputs: dialect, import, filter. Returns the
 * conjunction, for `.where(…)` of a query on `import_objects`.
 */
export function listConditions(dialect: Dialect, importId: number, filter: ListFilter) {
  return (eb: Builder): Expression<SqlBool> => {
    const listed = listedAs(filter.types);
    const all: Expression<SqlBool>[] = [eb('import_id', '=', importId)];
    all.push(listed.length === 1 ? eb('listed_as', '=', listed[0] as string) : eb('listed_as', 'in', listed));
    // A per-number list (an issue's comments) is found through the (import_id, type, number) index: name the types.
    if (!wholeLists(filter.types) || filter.number !== undefined) all.push(eb('type', 'in', [...filter.types]));
    if (filter.number !== undefined) all.push(eb('number', '=', filter.number));
    if (filter.state && filter.state !== 'all') all.push(eb('state', '=', filter.state));
    if (filter.since !== undefined) all.push(eb('updated_at', '>=', filter.since));
    if (filter.createdBefore !== undefined) all.push(eb('created_at', '<', filter.createdBefore));
    for (const label of filter.labels ?? []) all.push(contains(dialect, 'labels', `\n${label}\n`));
    if (filter.milestone) all.push(presence(eb, filter.milestone, (number) => eb('milestone', '=', number), 'milestone'));
    if (filter.assignee) all.push(presence(eb, filter.assignee, (login) => contains(dialect, 'assignees', `\n${login}\n`), 'assignees'));
    if (filter.creator !== undefined) all.push(eb('author', '=', filter.creator));
    if (filter.head !== undefined) all.push(eb('head_label', '=', filter.head));
    if (filter.base !== undefined) all.push(eb('base_ref', '=', filter.base));
    if (filter.mentioned !== undefined) all.push(mentionedIn(eb, dialect, importId, filter.mentioned));
    if (filter.permission !== undefined) all.push(contains(dialect, 'labels', `\n${filter.permission}\n`));
    if (filter.affiliation !== undefined) all.push(markedAs(eb, importId, filter.affiliation));
    return eb.and(all);
  };
}

/**
 * `affiliation=direct|outside` of `/collaborators`: the collaborator has the
 * mark that list stored under its key (one primary-key probe per row; a
 * repository has few collaborators).
 */
function markedAs(eb: Builder, importId: number, affiliation: 'direct' | 'outside'): Expression<SqlBool> {
  const marks = eb
    .selectFrom('import_objects as mark')
    .select('mark.key')
    .where('mark.import_id', '=', importId)
    .where('mark.type', '=', affiliation === 'direct' ? 'collaborator_direct' : 'collaborator_outside')
    .whereRef('mark.key', '=', 'import_objects.key');
  return eb.exists(marks);
}

/**
 * `mentioned=login`: the issue's own body mentions the login, or one of its
 * comments does (comments are found by the number through the
 * `(import_id, type, number)` index).
 */
function mentionedIn(eb: Builder, dialect: Dialect, importId: number, login: string): Expression<SqlBool> {
  const needle = `\n${login}\n`;
  const inComments = eb
    .selectFrom('import_objects as comment')
    .select('comment.number')
    .where('comment.import_id', '=', importId)
    .where('comment.type', '=', 'note')
    .where(dialect === 'postgres' ? sql<SqlBool>`strpos(comment.mentions, ${needle}) > 0` : sql<SqlBool>`instr(comment.mentions, ${needle}) > 0`);
  return eb.or([contains(dialect, 'mentions', needle), eb('number', 'in', inComments)]);
}
