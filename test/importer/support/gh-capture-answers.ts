import { Kind, parse, type FieldNode, type FragmentDefinitionNode, type SelectionSetNode } from 'graphql';

/*
 * Minimal, well-typed answers to whatever GraphQL query gh sends, for the
 * capture of its queries (gh-capture.ts): gh decodes answers into Go structs
 * and stops at the first field of the wrong JSON type, and some commands
 * only send their next query once the first answered (a milestone found by
 * title, a pull request found by number). With no schema at hand, each
 * field's value is chosen by its name — GitHub's naming is regular enough:
 * `…At`/`…Date` are times, `is…`/`has…`/`viewer…` booleans, a connection's
 * `nodes` one item, `totalCount` a count. What is answered is of no
 * interest; only that gh goes on to its next request.
 */

const INT_FIELDS = new Set(['number', 'totalCount', 'issueCount', 'databaseId', 'additions', 'deletions', 'changedFiles', 'diskUsage', 'stargazerCount', 'forkCount', 'size', 'downloadCount', 'progressPercentage']);
const BOOL_FIELDS = new Set(['locked', 'closed', 'merged', 'maintainerCanModify', 'includesCreatedEdit', 'viewerDidAuthor', 'hasNextPage', 'hasPreviousPage', 'isInOrganization']);
const LIST_FIELDS = new Set(['nodes', 'edges', 'reactionGroups', 'fundingLinks', 'fields']);
/**
 * gh's feature detection on an enterprise host (`Issue: __type(name: "Issue") { fields { name } }`):
 * answered with every field gh looks for, as github.com has them all, so the
 * queries captured are the fullest gh sends; a schema lacking one of these
 * makes gh leave that field out.
 */
const DETECTED_FIELDS: Record<string, string[]> = {
  Issue: ['stateReason'],
  PullRequest: ['isInMergeQueue'],
  Repository: ['pullRequestTemplates', 'visibility', 'autoMergeAllowed'],
};
/** Values where gh's code compares the string (enum values, the milestone it looks up by title, the tag). */
const STRING_VALUES: Record<string, string> = {
  state: 'OPEN',
  authorAssociation: 'OWNER',
  content: 'THUMBS_UP',
  mergeStateStatus: 'CLEAN',
  mergeable: 'MERGEABLE',
  reviewDecision: 'APPROVED',
  visibility: 'PUBLIC',
  viewerPermission: 'ADMIN',
  __typename: 'User',
  title: 'v1',
  tagName: 'v1.0',
  name: 'v1.0',
  login: 'monalisa',
  color: 'd73a4a',
  oid: '0123456789abcdef0123456789abcdef01234567',
  url: 'https://example.invalid/acme/widgets/issues/1',
  headRefName: 'b',
  baseRefName: 'main',
};
const TIME = '2024-01-02T03:04:05Z';

/** The value of one scalar field, by its name (see above). */
function scalarFor(name: string): unknown {
  if (INT_FIELDS.has(name)) return 1;
  if (BOOL_FIELDS.has(name) || /^(is|has|viewer(Can|Did|Has|Is)|can)[A-Z]/.test(name)) return name === 'hasNextPage' ? false : name.startsWith('is') ? false : true;
  if (/(At|Date)$/.test(name) || name === 'dueOn') return TIME;
  return STRING_VALUES[name] ?? 'x';
}

/** The fields of a selection set with inline fragments and fragment spreads merged in. */
function fieldsOf(set: SelectionSetNode, fragments: Map<string, FragmentDefinitionNode>): FieldNode[] {
  const fields: FieldNode[] = [];
  for (const selection of set.selections) {
    if (selection.kind === Kind.FIELD) fields.push(selection);
    else if (selection.kind === Kind.INLINE_FRAGMENT) fields.push(...fieldsOf(selection.selectionSet, fragments));
    else {
      const fragment = fragments.get(selection.name.value);
      if (fragment) fields.push(...fieldsOf(fragment.selectionSet, fragments));
    }
  }
  return fields;
}

/** The fields a `__type(name: "…")` feature detection is answered with (see DETECTED_FIELDS). */
function detectedFields(field: FieldNode): string[] {
  const argument = field.arguments?.find((candidate) => candidate.name.value === 'name');
  const typeName = argument?.value.kind === Kind.STRING ? argument.value.value : '';
  return DETECTED_FIELDS[typeName] ?? [];
}

function objectFor(set: SelectionSetNode, fragments: Map<string, FragmentDefinitionNode>): Record<string, unknown> {
  const object: Record<string, unknown> = {};
  for (const field of fieldsOf(set, fragments)) {
    const key = field.alias?.value ?? field.name.value;
    const name = field.name.value;
    if (name === '__type') object[key] = { fields: detectedFields(field).map((fieldName) => ({ name: fieldName })) };
    else if (!field.selectionSet) object[key] = scalarFor(name);
    else if (LIST_FIELDS.has(name)) object[key] = [objectFor(field.selectionSet, fragments)];
    else object[key] = objectFor(field.selectionSet, fragments);
  }
  return object;
}

/** `{ data }` for `query` (its first operation), every field given a value of the type gh expects. */
export function minimalAnswer(query: string): { data: Record<string, unknown> } {
  const document = parse(query);
  const fragments = new Map<string, FragmentDefinitionNode>();
  for (const definition of document.definitions) if (definition.kind === Kind.FRAGMENT_DEFINITION) fragments.set(definition.name.value, definition);
  const operation = document.definitions.find((definition) => definition.kind === Kind.OPERATION_DEFINITION);
  if (!operation || operation.kind !== Kind.OPERATION_DEFINITION) throw new Error('the query has no operation');
  return { data: objectFor(operation.selectionSet, fragments) };
}
