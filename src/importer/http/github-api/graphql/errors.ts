import { GraphQLError, Kind, type ASTNode, type DocumentNode, type SelectionSetNode } from 'graphql';

/*
 * GitHub's GraphQL errors. Every error is answered with HTTP 200 in the
 * body's `errors` (GitHub's shape: `type`, `path`, `locations`, `message`),
 * except a body that is not JSON (400, GitHub's REST-style message).
 */

/** The `type`s GitHub gives its execution and limit errors. */
export type GithubErrorType =
  | 'NOT_FOUND'
  | 'FORBIDDEN'
  | 'INVALID_CURSOR_ARGUMENTS'
  | 'EXCESSIVE_PAGINATION'
  | 'MISSING_PAGINATION_BOUNDARIES'
  | 'MAX_NODE_LIMIT_EXCEEDED'
  | 'MAX_DEPTH_EXCEEDED'
  | 'ARGUMENT_LIMIT'
  | 'UNPROCESSABLE';

/** An error a resolver or a limit check raises, answered with GitHub's `type`. */
export function githubError(type: GithubErrorType, message: string, nodes?: readonly ASTNode[] | ASTNode): GraphQLError {
  return new GraphQLError(message, { ...(nodes ? { nodes } : {}), extensions: { type } });
}

/** GitHub's answer for a repository that does not exist or that the reader may not see. */
export function repositoryNotFound(owner: string, name: string): GraphQLError {
  return githubError('NOT_FOUND', `Could not resolve to a Repository with the name '${owner}/${name}'.`);
}

/** One error as GitHub's body lists it. */
export interface GithubErrorEntry {
  type?: string;
  path?: readonly (string | number)[];
  extensions?: Record<string, unknown>;
  locations?: readonly { line: number; column: number }[];
  message: string;
}

/** graphql-js's message for an unknown field: `Cannot query field "x" on type "Y".` (with an optional suggestion). */
const UNKNOWN_FIELD = /^Cannot query field "([^"]+)" on type "([^"]+)"\./;
/** graphql-js's message for an unknown argument. */
const UNKNOWN_ARGUMENT = /^Unknown argument "([^"]+)" on field "([^".]+)\.([^"]+)"\./;

/** The path GitHub gives a node of the document: `query Name` (or `fragment Name`), then the fields (and `... on Type`) down to it. */
export function documentPath(document: DocumentNode, target: ASTNode | undefined): string[] {
  if (!target) return [];
  const search = (selectionSet: SelectionSetNode | undefined, path: string[]): string[] | undefined => {
    for (const selection of selectionSet?.selections ?? []) {
      if (selection === target) return selection.kind === Kind.FIELD ? [...path, (selection.alias ?? selection.name).value] : path;
      const step = selection.kind === Kind.FIELD ? (selection.alias ?? selection.name).value : selection.kind === Kind.INLINE_FRAGMENT ? `... on ${selection.typeCondition?.name.value ?? ''}`.trim() : undefined;
      if (step === undefined) continue;
      const found = selection.kind === Kind.FRAGMENT_SPREAD ? undefined : search(selection.selectionSet, [...path, step]);
      if (found) return found;
    }
    return undefined;
  };
  for (const definition of document.definitions) {
    if (definition.kind !== Kind.OPERATION_DEFINITION && definition.kind !== Kind.FRAGMENT_DEFINITION) continue;
    const head = definition.kind === Kind.FRAGMENT_DEFINITION ? `fragment ${definition.name.value}` : definition.name ? `${definition.operation} ${definition.name.value}` : definition.operation;
    if (definition === target) return [head];
    const found = search(definition.selectionSet, [head]);
    if (found) return found;
  }
  return [];
}

/**
 * A graphql-js validation error as GitHub words it: an unknown field is
 * `Field 'x' doesn't exist on type 'Y'` (code `undefinedField`), an unknown
 * argument `Field 'f' doesn't accept argument 'a'` (code
 * `argumentNotAccepted`); others keep graphql-js's message. `type` carries
 * the code too, as the REST-minded clients read it; `path` is
 * GitHub's, from the operation down to the field (documentPath).
 */
export function validationEntry(error: GraphQLError, document: DocumentNode): GithubErrorEntry {
  const path = documentPath(document, error.nodes?.[0]);
  const locations = error.locations ? { locations: error.locations.map(({ line, column }) => ({ line, column })) } : {};
  const field = UNKNOWN_FIELD.exec(error.message);
  if (field) {
    const [, fieldName, typeName] = field;
    return {
      type: 'undefinedField',
      path,
      extensions: { code: 'undefinedField', typeName, fieldName },
      ...locations,
      message: `Field '${fieldName}' doesn't exist on type '${typeName}'`,
    };
  }
  const argument = UNKNOWN_ARGUMENT.exec(error.message);
  if (argument) {
    const [, argumentName, , fieldName] = argument;
    return {
      type: 'argumentNotAccepted',
      path,
      extensions: { code: 'argumentNotAccepted', name: fieldName, typeName: 'Field', argumentName },
      ...locations,
      message: `Field '${fieldName}' doesn't accept argument '${argumentName}'`,
    };
  }
  return { ...(path.length > 0 ? { path } : {}), ...locations, message: error.message.replace(/"/g, "'") };
}

/** An execution or limit error as GitHub lists it: `type`, `path`, `locations`, `message`. */
export function executionEntry(error: GraphQLError): GithubErrorEntry {
  const type = typeof error.extensions?.type === 'string' ? error.extensions.type : undefined;
  return {
    ...(type ? { type } : {}),
    ...(error.path ? { path: error.path } : {}),
    ...(error.locations ? { locations: error.locations.map(({ line, column }) => ({ line, column })) } : {}),
    message: error.originalError && !type && !(error.originalError instanceof GraphQLError) ? 'Something went wrong while executing your query.' : error.message,
  };
}

/**
 * A syntax error as GitHub words it: `Parse error on "x" (…) at [line, column]`
 * (graphql-js's "Syntax Error: Expected …, found …" carries the token).
 */
export function parseEntry(error: GraphQLError): GithubErrorEntry {
  const location = error.locations?.[0];
  const tokens = /Document contains more tha[nt] (\d+) tokens/.exec(error.message);
  if (tokens) return { message: `Query is too large: it has more than ${Number(tokens[1]).toLocaleString('en-US')} tokens; ask for less at once.` };
  const found = /found (.+)\.$/.exec(error.message)?.[1] ?? /Unexpected (.+)\.$/.exec(error.message)?.[1];
  const token = found === undefined ? 'the query' : found.startsWith('"') ? found : `"${found.replace(/^<|>$/g, '')}"`;
  return {
    ...(location ? { locations: [{ line: location.line, column: location.column }] } : {}),
    message: location ? `Parse error on ${token} at [${location.line}, ${location.column}]` : `Parse error on ${token}`,
  };
}
