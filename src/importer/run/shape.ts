import { GithubAnswerError } from '../errors.js';
import type { ObjectRow } from '../store/objects.js';

/*
 * What an import takes from an upstream answer before it stores anything.
 * The API host is not trusted: a list may hold nulls or arrays where GitHub
 * has objects, an id may be an object, a number a string, a date any text,
 * and JSON may nest deep enough to overflow the stack of whatever walks it
 * (JSON.stringify, the login scan). Each check here is cheap next to the
 * JSON parse that came before it, and a failure is a GithubAnswerError that
 * names the list and what was wrong, so the run fails with a reason and
 * nothing of that page is stored.
 */

/** Deepest JSON nesting taken from an upstream (GitHub's objects nest about 6 deep; a repository inside a pull request, 4 more). */
export const MAX_JSON_DEPTH = 64;
/** Longest key, state or date column copied out of an object (ids, names, branch names, URL keys fit easily). */
const MAX_COLUMN_CHARS = 1024;
/** What GitHub's timestamps look like (`2011-04-10T20:09:31Z`, sometimes with fractions or an offset). */
const TIMESTAMP = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d{1,9})?(?:Z|[+-]\d{2}:?\d{2})$/;
/** Keys that are really a missing or non-scalar field turned into text (`String(undefined)`, `String({})`). */
const BROKEN_KEYS: ReadonlySet<string> = new Set(['undefined', 'null', 'NaN', '[object Object]', '']);

/**
 * The items of a list answer: an array of JSON objects, each nested at most
 * MAX_JSON_DEPTH deep.
 * @throws GithubAnswerError naming `where` and what is at fault.
 */
export function listItems(where: string, data: unknown): any[] {
  if (!Array.isArray(data)) throw new GithubAnswerError(where, `it is ${describe(data)}, not a list`);
  data.forEach((item, index) => checkObject(where, item, `item ${index + 1}`));
  return data;
}

/**
 * One JSON object of an answer (`what`: `item 3`, `the answer`), nested at
 * most MAX_JSON_DEPTH deep.
 * @throws GithubAnswerError naming `where`.
 */
export function checkObject(where: string, value: unknown, what = 'the answer'): void {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) throw new GithubAnswerError(where, `${what} is ${describe(value)}, not an object`);
  if (depthExceeds(value, MAX_JSON_DEPTH)) throw new GithubAnswerError(where, `${what} nests deeper than ${MAX_JSON_DEPTH} levels`);
}

/**
 * An object row as it is about to be stored: a usable key, whole
 * non-negative numbers, timestamps that are timestamps, short states, data
 * nested at most MAX_JSON_DEPTH deep.
 * @throws GithubAnswerError naming the type and the field at fault.
 */
export function checkObjectRow(row: ObjectRow): void {
  const where = `${row.type} ${JSON.stringify(String(row.key).slice(0, 40))}`;
  if (typeof row.key !== 'string' || BROKEN_KEYS.has(row.key) || row.key.length > MAX_COLUMN_CHARS) throw new GithubAnswerError(where, 'has no usable id');
  for (const field of ['number', 'parent', 'comments'] as const) {
    const value = row[field];
    if (value !== null && value !== undefined && !(Number.isSafeInteger(value) && value >= 0)) throw new GithubAnswerError(where, `its ${field} is ${describe(value)}, not a whole number`);
  }
  for (const field of ['createdAt', 'updatedAt'] as const) {
    const value = row[field];
    if (value !== null && value !== undefined && !(typeof value === 'string' && TIMESTAMP.test(value))) throw new GithubAnswerError(where, `its ${field} is ${describe(value)}, not a timestamp`);
  }
  if (row.state !== null && row.state !== undefined && (typeof row.state !== 'string' || row.state.length > MAX_COLUMN_CHARS)) throw new GithubAnswerError(where, 'has a state that is not a short string');
  if (row.data !== null && typeof row.data === 'object' && depthExceeds(row.data, MAX_JSON_DEPTH)) throw new GithubAnswerError(where, `nests deeper than ${MAX_JSON_DEPTH} levels`);
}

/** Whether `value` nests deeper than `limit` objects or arrays (iterative: no stack to overflow). */
export function depthExceeds(value: unknown, limit: number): boolean {
  const stack: { value: unknown; depth: number }[] = [{ value, depth: 1 }];
  while (stack.length > 0) {
    const { value: node, depth } = stack.pop()!;
    if (node === null || typeof node !== 'object') continue;
    if (depth > limit) return true;
    for (const child of Array.isArray(node) ? node : Object.values(node)) if (child !== null && typeof child === 'object') stack.push({ value: child, depth: depth + 1 });
  }
  return false;
}

/** A value's kind for a message, never its content (upstream text stays out of our messages). */
function describe(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  if (typeof value === 'string') return `a string of ${value.length} characters`;
  if (typeof value === 'number') return String(value);
  return `a ${typeof value}`;
}
