/*
 * The list columns copied out of a stored object's JSON (migration
 * 020_import_list_columns), so that the GitHub-compatible API filters and
 * sorts in SQL on indexed columns instead of parsing JSON per row. Computed
 * here once, from the JSON as GitHub gave it, both where the importer writes
 * objects (importer/store/objects.ts) and by the migration's backfill of rows
 * stored before it.
 */

/** The columns of one row (null where the type has no such value). */
export interface ListColumns {
  /** GitHub's id (the key) as a number: the tiebreaker of every list order, so an index serves `ORDER BY created_at, sort_id`. */
  sort_id: number | null;
  /** The list the row is served in: its type, except that a pull request's issue shape is listed with the issues. */
  listed_as: string;
  /** The milestone's number (issues and pull requests). */
  milestone: number | null;
  /** The lower-cased login of `user` (issues and pull requests). */
  author: string | null;
  /** Lower-cased assignee logins between newlines (`\nalice\nbob\n`), as `labels` holds names. */
  assignees: string | null;
  /** Lower-cased logins @-mentioned in the body (issues, pull requests' issue shapes, comments), between newlines. */
  mentions: string | null;
  /** `head.label` of a pull request with the owner lower-cased (`acme:feature/x`): what `head=user:ref` matches. */
  head_label: string | null;
  /** `base.ref` of a pull request. */
  base_ref: string | null;
}

/** Types whose rows are issues or pull requests (milestone, author, assignees). */
const CONVERSATIONS: ReadonlySet<string> = new Set(['issue', 'pull_request_issue', 'pull_request']);
/** Types whose body is searched for mentions: what `mentioned=` of `/issues` looks at. */
const MENTIONING: ReadonlySet<string> = new Set(['issue', 'pull_request_issue', 'note']);

/** Fenced code blocks and inline code spans: GitHub does not notify (mention) anyone named inside them. */
const CODE = /```[\s\S]*?(?:```|$)|~~~[\s\S]*?(?:~~~|$)|`[^`\n]*`/g;
/**
 * An @-mention as GitHub links it: `@login` not preceded by a word
 * character, `@`, `/` or `` ` `` (an e-mail address or a path is no mention),
 * a login of GitHub's form (alphanumerics and single hyphens, at most 39),
 * not followed by `/` (`@org/team` names a team, not a user).
 */
const MENTION = /(?:^|[^\w@/`])@([A-Za-z0-9](?:-?[A-Za-z0-9]){0,38})(?![\w/-])/g;

/** Inputs: Markdown text. Returns the lower-cased logins it @-mentions (outside code), each once, in order. */
export function mentionedLogins(body: unknown): string[] {
  if (typeof body !== 'string' || !body.includes('@')) return [];
  const text = body.replace(CODE, ' ');
  return [...new Set([...text.matchAll(MENTION)].map((match) => (match[1] as string).toLowerCase()))];
}

/** Lower-cased names between newlines (`\na\nb\n`), or null for none: the stored form substring filters match against. */
export function newlineList(names: readonly string[]): string | null {
  return names.length > 0 ? `\n${names.map((name) => name.toLowerCase()).join('\n')}\n` : null;
}

function record(value: unknown): Record<string, unknown> | undefined {
  return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined;
}

function loginOf(user: unknown): string | null {
  const login = record(user)?.login;
  return typeof login === 'string' ? login.toLowerCase() : null;
}

/** The key as a number when it is GitHub's numeric id (branch names, URL keys… have none). */
export function sortIdOf(key: string): number | null {
  return /^[0-9]{1,15}$/.test(key) ? Number(key) : null;
}

/**
 * Inputs: a row's type, key and JSON (as GitHub gave it). Returns its list
 * columns: what the API's list filters and orders read.
 */
export function listColumns(type: string, key: string, data: unknown): ListColumns {
  const object = record(data) ?? {};
  const conversation = CONVERSATIONS.has(type);
  const milestone = conversation ? record(object.milestone)?.number : undefined;
  const assignees = conversation && Array.isArray(object.assignees) ? object.assignees.map(loginOf).filter((login): login is string => login !== null) : [];
  const head = type === 'pull_request' ? record(object.head) : undefined;
  const base = type === 'pull_request' ? record(object.base) : undefined;
  const headLabel = typeof head?.label === 'string' ? head.label : null;
  const colon = headLabel?.indexOf(':') ?? -1;
  return {
    sort_id: sortIdOf(key),
    listed_as: type === 'pull_request_issue' ? 'issue' : type,
    milestone: typeof milestone === 'number' ? milestone : null,
    author: conversation ? loginOf(object.user) : null,
    assignees: newlineList(assignees),
    mentions: MENTIONING.has(type) ? newlineList(mentionedLogins(object.body)) : null,
    head_label: headLabel === null ? null : colon < 0 ? headLabel : headLabel.slice(0, colon).toLowerCase() + headLabel.slice(colon),
    base_ref: typeof base?.ref === 'string' ? base.ref : null,
  };
}

/** The list columns in the order objects.ts writes them. */
export const LIST_COLUMNS = ['sort_id', 'listed_as', 'milestone', 'author', 'assignees', 'mentions', 'head_label', 'base_ref'] as const satisfies readonly (keyof ListColumns)[];
