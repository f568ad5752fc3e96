import {
  getArgumentValues,
  getNamedType,
  isInterfaceType,
  isObjectType,
  Kind,
  type DocumentNode,
  type FieldNode,
  type FragmentDefinitionNode,
  type GraphQLError,
  type GraphQLSchema,
  type OperationDefinitionNode,
  type SelectionSetNode,
  type GraphQLNamedType,
} from 'graphql';
import { githubError } from './errors.js';

/*
 * GitHub's limits, checked on the validated document before anything is
 * read: every connection whose nodes or edges are selected must say
 * `first` or `last` (not both), each 1..100; the nodes a query may return
 * (each connection's page size times those of the connections above it,
 * summed) stay within 500,000; fields nest at most MAX_DEPTH deep.
 */

export const MAX_PAGE = 100;
export const MAX_NODES = 500_000;
/** Deeper than any query gh sends (its deepest, `pr view`'s checks, is 12). */
export const MAX_DEPTH = 25;

interface Walk {
  schema: GraphQLSchema;
  fragments: Map<string, FragmentDefinitionNode>;
  variables: Record<string, unknown>;
  errors: GraphQLError[];
  nodes: number;
  deepest: number;
  /** Selections visited: fragments spread many times over can make a short document a huge walk. */
  visited: number;
}

/** Selections a document may expand to (through its fragments) before it is refused as too complex. */
const MAX_VISITS = 50_000;

/** Whether a selection (through fragments) asks for `nodes` or `edges`. */
function selectsItems(walk: Walk, selectionSet: SelectionSetNode | undefined, seen = new Set<string>()): boolean {
  return (selectionSet?.selections ?? []).some((selection) => {
    if (selection.kind === Kind.FIELD) return selection.name.value === 'nodes' || selection.name.value === 'edges';
    if (selection.kind === Kind.INLINE_FRAGMENT) return selectsItems(walk, selection.selectionSet, seen);
    const name = selection.name.value;
    if (seen.has(name)) return false;
    seen.add(name);
    return selectsItems(walk, walk.fragments.get(name)?.selectionSet, seen);
  });
}

/** The page size a connection field asks for, after checking GitHub's rules on it; undefined when unbounded. */
function pageSize(walk: Walk, field: FieldNode, connection: string, args: Record<string, unknown>): number | undefined {
  const { first, last } = args as { first?: number | null; last?: number | null };
  const hasFirst = typeof first === 'number';
  const hasLast = typeof last === 'number';
  if (hasFirst && hasLast) walk.errors.push(githubError('EXCESSIVE_PAGINATION', `Passing both \`first\` and \`last\` to paginate the \`${connection}\` connection is not supported.`, field));
  for (const { name, value } of [{ name: 'first', value: first }, { name: 'last', value: last }]) {
    if (typeof value !== 'number') continue;
    if (value > MAX_PAGE) walk.errors.push(githubError('EXCESSIVE_PAGINATION', `Requesting ${value} records on the \`${connection}\` connection exceeds the \`${name}\` limit of ${MAX_PAGE} records.`, field));
    else if (value < 1) walk.errors.push(githubError('EXCESSIVE_PAGINATION', `\`${name}\` on the \`${connection}\` connection must be between 1 and ${MAX_PAGE}, not ${value}.`, field));
  }
  if (!hasFirst && !hasLast) {
    if (selectsItems(walk, field.selectionSet)) {
      walk.errors.push(githubError('MISSING_PAGINATION_BOUNDARIES', `You must provide a \`first\` or \`last\` value to properly paginate the \`${connection}\` connection.`, field));
    }
    return undefined;
  }
  return Math.min(Math.max(hasFirst ? first : (last as number), 0), MAX_PAGE);
}

function visit(walk: Walk, selectionSet: SelectionSetNode | undefined, parent: GraphQLNamedType | undefined, depth: number, multiplier: number, seen: Set<string>): void {
  for (const selection of selectionSet?.selections ?? []) {
    if (++walk.visited > MAX_VISITS) return;
    if (selection.kind === Kind.INLINE_FRAGMENT) {
      const type = selection.typeCondition ? walk.schema.getType(selection.typeCondition.name.value) : parent;
      visit(walk, selection.selectionSet, type ?? parent, depth, multiplier, seen);
      continue;
    }
    if (selection.kind === Kind.FRAGMENT_SPREAD) {
      const fragment = walk.fragments.get(selection.name.value);
      if (!fragment || seen.has(fragment.name.value)) continue;
      const type = walk.schema.getType(fragment.typeCondition.name.value);
      visit(walk, fragment.selectionSet, type ?? parent, depth, multiplier, new Set([...seen, fragment.name.value]));
      continue;
    }
    const fieldDepth = depth + 1;
    walk.deepest = Math.max(walk.deepest, fieldDepth);
    if (selection.name.value.startsWith('__')) continue;
    const definition = parent && (isObjectType(parent) || isInterfaceType(parent)) ? parent.getFields()[selection.name.value] : undefined;
    if (!definition) continue;
    const type = getNamedType(definition.type);
    let childMultiplier = multiplier;
    if (type.name.endsWith('Connection')) {
      let args: Record<string, unknown> = {};
      try {
        args = getArgumentValues(definition, selection, walk.variables);
      } catch {
        // Arguments that do not coerce are execution's error to report.
      }
      const size = pageSize(walk, selection, selection.name.value, args);
      if (size !== undefined) {
        childMultiplier = multiplier * size;
        walk.nodes += childMultiplier;
        if (walk.nodes > MAX_NODES && !walk.errors.some((error) => error.extensions.type === 'MAX_NODE_LIMIT_EXCEEDED')) {
          const requested = walk.nodes.toLocaleString('en-US');
          walk.errors.push(githubError('MAX_NODE_LIMIT_EXCEEDED', `By the time this query traverses to the ${selection.name.value} connection, it is requesting up to ${requested} possible nodes which exceeds the maximum limit of ${MAX_NODES.toLocaleString('en-US')}.`, selection));
        }
      }
    }
    visit(walk, selection.selectionSet, type, fieldDepth, childMultiplier, seen);
  }
}

/** The limit errors of the operation to run (none: it may run). */
export function limitErrors(schema: GraphQLSchema, document: DocumentNode, operation: OperationDefinitionNode, variables: Record<string, unknown>): GraphQLError[] {
  const fragments = new Map(document.definitions.filter((d): d is FragmentDefinitionNode => d.kind === Kind.FRAGMENT_DEFINITION).map((d) => [d.name.value, d]));
  const walk: Walk = { schema, fragments, variables, errors: [], nodes: 0, deepest: 0, visited: 0 };
  const root = operation.operation === 'query' ? schema.getQueryType() : undefined;
  visit(walk, operation.selectionSet, root ?? undefined, 0, 1, new Set());
  if (walk.visited > MAX_VISITS) walk.errors.push(githubError('MAX_NODE_LIMIT_EXCEEDED', `This query expands to more than ${MAX_VISITS.toLocaleString('en-US')} selections through its fragments; ask for less at once.`, operation));
  if (walk.deepest > MAX_DEPTH) walk.errors.push(githubError('MAX_DEPTH_EXCEEDED', `Query has depth of ${walk.deepest}, which exceeds max depth of ${MAX_DEPTH}`, operation));
  return walk.errors;
}
