/**
 * What a PromQL expression names: the series selectors (metric name and label
 * matchers) and the labels of its grouping and matching clauses (`by`,
 * `without`, `on`, `ignoring`, `group_left`, `group_right`). Enough of PromQL
 * to check a rules file and a dashboard against a scrape, not a full parser:
 * function and aggregation names, keywords, numbers, strings outside
 * matchers, durations, ranges, subqueries, `offset` and `@` are skipped.
 * Grafana variables (`$__rate_interval`, `${feed}`, `$instance`) are taken as
 * opaque values wherever they appear.
 */

export interface LabelMatcher {
  label: string;
  op: '=' | '!=' | '=~' | '!~';
  value: string;
}

export interface Selector {
  /** The metric name (from before the braces or a `__name__="…"` matcher); undefined: braces only, matching by label. */
  metric: string | undefined;
  /** The matchers other than an equality on `__name__`. */
  matchers: LabelMatcher[];
}

export interface ExpressionNames {
  selectors: Selector[];
  /** Labels named by `by`, `without`, `on`, `ignoring`, `group_left`, `group_right`, in order, without repeats. */
  groupingLabels: string[];
}

/** A PromQL expression that does not tokenize or whose braces or matchers are malformed. */
export class PromqlSyntaxError extends Error {
  constructor(expression: string, reason: string) {
    super(`cannot read PromQL ${JSON.stringify(expression)}: ${reason}`);
    this.name = 'PromqlSyntaxError';
  }
}

type Token =
  | { kind: 'identifier'; text: string }
  | { kind: 'string'; text: string }
  | { kind: 'number'; text: string }
  | { kind: 'variable'; text: string }
  | { kind: 'punctuation'; text: string };

/** Binary operators and modifiers that look like identifiers but never name a metric. */
const KEYWORDS = new Set(['and', 'or', 'unless', 'by', 'without', 'on', 'ignoring', 'group_left', 'group_right', 'offset', 'bool', 'atan2']);
/** Clauses followed by a parenthesised list of label names. */
const LABEL_LIST_CLAUSES = new Set(['by', 'without', 'on', 'ignoring', 'group_left', 'group_right']);
/** Number literals that read as identifiers. */
const NUMBER_WORDS = new Set(['inf', 'nan']);

const TOKEN_PATTERNS: [Token['kind'] | 'space', RegExp][] = [
  ['space', /^(\s+|#[^\n]*)/],
  ['variable', /^\$(\{[^}]*\}|\[\[[^\]]*\]\]|[A-Za-z0-9_]+)/],
  // Durations (5m, 1h30m) and numbers (1e-9, 0x1f, .5) alike: both are skipped.
  ['number', /^(0x[0-9a-fA-F]+|(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?(ms|[smhdwy])?(\d+(ms|[smhdwy]))*)/],
  ['identifier', /^[A-Za-z_:][A-Za-z0-9_:]*/],
  ['string', /^("(\\.|[^"\\])*"|'(\\.|[^'\\])*'|`[^`]*`)/],
  ['punctuation', /^(=~|!~|!=|==|<=|>=|[{}()[\],=<>+\-*/%^@:])/],
];

function tokenize(expression: string): Token[] {
  const tokens: Token[] = [];
  let rest = expression;
  while (rest.length > 0) {
    const found = TOKEN_PATTERNS.map(([kind, pattern]) => [kind, pattern.exec(rest)?.[0]] as const).find(([, text]) => text !== undefined);
    if (!found) throw new PromqlSyntaxError(expression, `unexpected ${JSON.stringify(rest.slice(0, 10))}`);
    const [kind, text] = found as [Token['kind'] | 'space', string];
    if (kind !== 'space') tokens.push({ kind, text });
    rest = rest.slice(text.length);
  }
  return tokens;
}

/** The string literal's value: quotes removed, escapes of the quote and backslash undone. */
function unquote(literal: string): string {
  if (literal.startsWith('`')) return literal.slice(1, -1);
  return literal.slice(1, -1).replace(/\\(.)/g, '$1');
}

/** Reads the matchers of `{…}` starting at `tokens[start]` (the `{`); returns them and the index after `}`. */
function readMatchers(expression: string, tokens: Token[], start: number): { matchers: LabelMatcher[]; next: number } {
  const matchers: LabelMatcher[] = [];
  let index = start + 1;
  while (tokens[index]?.text !== '}') {
    const [label, op, value] = [tokens[index], tokens[index + 1], tokens[index + 2]];
    if (label?.kind !== 'identifier' || !op || !['=', '!=', '=~', '!~'].includes(op.text) || (value?.kind !== 'string' && value?.kind !== 'variable')) {
      throw new PromqlSyntaxError(expression, `malformed label matcher near token ${index}`);
    }
    matchers.push({ label: label.text, op: op.text as LabelMatcher['op'], value: value.kind === 'string' ? unquote(value.text) : value.text });
    index += 3;
    if (tokens[index]?.text === ',') index += 1;
    else if (tokens[index]?.text !== '}') throw new PromqlSyntaxError(expression, 'unclosed braces');
  }
  return { matchers, next: index + 1 };
}

/** Reads the label list `( a, b )` after a grouping clause at `tokens[start]`; returns the names and the index after `)`. */
function readLabelList(expression: string, tokens: Token[], start: number): { labels: string[]; next: number } {
  if (tokens[start]?.text !== '(') return { labels: [], next: start }; // group_left without a list
  const labels: string[] = [];
  let index = start + 1;
  while (tokens[index]?.text !== ')') {
    const token = tokens[index];
    if (token === undefined) throw new PromqlSyntaxError(expression, 'unclosed label list');
    if (token.kind === 'identifier') labels.push(token.text);
    else if (token.text !== ',') throw new PromqlSyntaxError(expression, `unexpected ${token.text} in a label list`);
    index += 1;
  }
  return { labels, next: index + 1 };
}

/** The index after the `]` closing the range or subquery opened at `tokens[start]`. */
function skipRange(expression: string, tokens: Token[], start: number): number {
  const close = tokens.findIndex((token, index) => index > start && token.text === ']');
  if (close < 0) throw new PromqlSyntaxError(expression, 'unclosed range');
  return close + 1;
}

/** Whether identifier `text`, followed by `next`, is a metric name: not a keyword, a number, a function or an aggregation (`sum by (…)`). */
function namesMetric(text: string, next: Token | undefined): boolean {
  if (KEYWORDS.has(text) || NUMBER_WORDS.has(text.toLowerCase())) return false;
  return next?.text !== '(' && next?.text !== 'by' && next?.text !== 'without';
}

/** The selectors and grouping labels `expression` names (see the file comment). */
export function expressionNames(expression: string): ExpressionNames {
  const tokens = tokenize(expression);
  const selectors: Selector[] = [];
  const grouping: string[] = [];
  const selector = (metric: string | undefined, matchers: LabelMatcher[]): Selector => {
    const name = matchers.find((matcher) => matcher.label === '__name__' && matcher.op === '=');
    return { metric: metric ?? name?.value, matchers: matchers.filter((matcher) => matcher !== name) };
  };
  let index = 0;
  while (index < tokens.length) {
    const token = tokens[index]!;
    const next = tokens[index + 1];
    if (token.text === '[') {
      index = skipRange(expression, tokens, index);
    } else if (token.text === '{') {
      const read = readMatchers(expression, tokens, index);
      selectors.push(selector(undefined, read.matchers));
      index = read.next;
    } else if (token.kind === 'identifier' && LABEL_LIST_CLAUSES.has(token.text)) {
      const read = readLabelList(expression, tokens, index + 1);
      grouping.push(...read.labels);
      index = read.next;
    } else if (token.kind === 'identifier' && namesMetric(token.text, next)) {
      const read = next?.text === '{' ? readMatchers(expression, tokens, index + 1) : { matchers: [], next: index + 1 };
      selectors.push(selector(token.text, read.matchers));
      index = read.next;
    } else {
      // Function and aggregation names (before their parenthesis), keywords, numbers, strings, operators, variables.
      index += 1;
    }
  }
  return { selectors, groupingLabels: [...new Set(grouping)] };
}
