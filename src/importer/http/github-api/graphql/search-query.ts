/*
 * GitHub's issue search syntax, as gh builds it (`repo:o/r is:issue
 * state:open label:"help wanted" sort:created-desc some words`): words
 * separated by spaces, `"quoted phrases"` with `\"` escapes, `key:value`
 * qualifiers (the value quoted or not), `-key:value` to negate. Qualifiers
 * this copy does not know are searched for as text, as GitHub does with
 * unknown ones.
 */

export interface SearchQualifier {
  key: string;
  value: string;
  negated: boolean;
}

export interface ParsedSearch {
  qualifiers: SearchQualifier[];
  /** Free-text terms (lower-cased), all of which must appear. */
  terms: string[];
}

/** The qualifiers the issue search understands. */
export const KNOWN_QUALIFIERS = new Set(['repo', 'is', 'type', 'state', 'label', 'assignee', 'author', 'mentions', 'milestone', 'base', 'head', 'draft', 'no', 'sort', 'in', 'user', 'org']);

/** Splits a query into tokens: runs of non-space, where a `"…"` part (with `\"` escapes) may hold spaces. */
function tokens(query: string): string[] {
  const found: string[] = [];
  let current = '';
  let quoted = false;
  for (let index = 0; index < query.length; index++) {
    const char = query[index]!;
    if (quoted && char === '\\' && index + 1 < query.length) {
      current += query[++index];
    } else if (char === '"') {
      quoted = !quoted;
    } else if (!quoted && /\s/.test(char)) {
      if (current !== '') found.push(current);
      current = '';
    } else {
      current += char;
    }
  }
  if (current !== '') found.push(current);
  return found;
}

/** The qualifiers and free-text terms of `query`. */
export function parseSearch(query: string): ParsedSearch {
  const qualifiers: SearchQualifier[] = [];
  const terms: string[] = [];
  // A qualifier's key is read from the raw token so that `label:"a b"` keeps its quoted value whole.
  for (const token of tokens(query)) {
    const match = /^(-?)([a-z-]+):(.+)$/i.exec(token);
    const key = match?.[2]?.toLowerCase();
    if (match && key && KNOWN_QUALIFIERS.has(key)) qualifiers.push({ key, value: match[3]!, negated: match[1] === '-' });
    else terms.push(token.toLowerCase());
  }
  return { qualifiers, terms };
}
