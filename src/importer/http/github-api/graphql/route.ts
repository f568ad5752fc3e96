import type { FastifyReply, FastifyRequest } from 'fastify';
import { execute, getOperationAST, getVariableValues, GraphQLError, OverlappingFieldsCanBeMergedRule, parse, specifiedRules, validate, type DocumentNode, type ValidationRule } from 'graphql';
import type { ApiServer, RouteDeps } from '../context.js';
import { GITHUB_MEDIA_TYPE, JSON_CONTENT_TYPE } from '../errors.js';
import { answerKey, registryStamp, rememberAnswer, rememberedAnswer } from './answers.js';
import { RequestScope } from './context.js';
import { executionEntry, parseEntry, validationEntry, type GithubErrorEntry } from './errors.js';
import { limitErrors } from './limits.js';
import { rootValue } from './root.js';
import { GITHUB_SCHEMA } from './schema/index.js';

/*
 * `POST /graphql` and `POST /api/graphql` (the path GitHub Enterprise
 * hosts serve it at, which gh uses for any host but github.com): GitHub's
 * GraphQL over the imported copies, read-only, behind the API's token
 * check. The reference implementation parses, validates and executes;
 * this adds GitHub's limits (limits.ts) and error shapes (errors.ts).
 * Every GraphQL error is a 200 with `errors`, as on GitHub; a body that is
 * not JSON is GitHub's 400.
 */

/** The largest request body read: far above any query gh sends (a few KiB). */
export const GRAPHQL_BODY_LIMIT = 256 * 1024;
/** The most tokens a query may have: parsing stops there, so a huge query costs no more than this. */
const MAX_TOKENS = 20_000;

const DOCUMENTATION_URL = 'https://docs.github.com/graphql';

/**
 * The overlapping-fields rule as GitHub applies it: two fields of one
 * response name under fragments on different types may return different
 * enums or scalars (gh's `...on Issue{state} ...on PullRequest{state}` is
 * `IssueState` against `PullRequestState`, which the spec's rule refuses
 * and GitHub answers). Every other conflict is still an error.
 */
const LenientOverlappingFields: ValidationRule = (context) => {
  const lenient = Object.create(context, {
    reportError: { value: (error: GraphQLError) => (/ return conflicting types /.test(error.message) ? undefined : context.reportError(error)) },
  }) as typeof context;
  return OverlappingFieldsCanBeMergedRule(lenient);
};

const RULES = specifiedRules.map((rule) => (rule === OverlappingFieldsCanBeMergedRule ? LenientOverlappingFields : rule));

interface GraphqlBody {
  query: string;
  variables: Record<string, unknown>;
  operationName: string | undefined;
}

/** Sends a JSON answer (`body` as a value, or JSON text already made). */
function send(reply: FastifyReply, status: number, body: unknown): FastifyReply {
  return reply
    .code(status)
    .header('content-type', JSON_CONTENT_TYPE)
    .header('x-github-media-type', GITHUB_MEDIA_TYPE)
    .header('x-content-type-options', 'nosniff')
    .send(typeof body === 'string' ? body : JSON.stringify(body));
}

const errorsBody = (errors: GithubErrorEntry[]) => ({ errors });

/** The request's query, variables and operation name; a GitHub error body when the JSON is not one. */
function readBody(raw: unknown): GraphqlBody | { status: number; body: unknown } {
  let parsed: unknown;
  try {
    parsed = typeof raw === 'string' ? JSON.parse(raw) : raw;
  } catch {
    return { status: 400, body: { message: 'Problems parsing JSON', documentation_url: DOCUMENTATION_URL } };
  }
  const body = (parsed ?? {}) as { query?: unknown; variables?: unknown; operationName?: unknown };
  if (typeof body !== 'object' || Array.isArray(body) || typeof body.query !== 'string' || body.query.trim() === '') {
    return { status: 200, body: errorsBody([{ message: 'A query attribute must be specified and must be a string.' }]) };
  }
  let variables: unknown = body.variables ?? {};
  if (typeof variables === 'string') {
    try {
      variables = variables.trim() === '' ? {} : (JSON.parse(variables) as unknown);
    } catch {
      return { status: 200, body: errorsBody([{ message: 'Variables are invalid JSON.' }]) };
    }
  }
  if (variables === null || typeof variables !== 'object' || Array.isArray(variables)) {
    return { status: 200, body: errorsBody([{ message: 'Variables are invalid JSON.' }]) };
  }
  const operationName = typeof body.operationName === 'string' && body.operationName !== '' ? body.operationName : undefined;
  return { query: body.query, variables: variables as Record<string, unknown>, operationName };
}

/** Documents kept parsed and validated, by query text: clients send the same few queries again and again (gh's, a bench's). */
const VALIDATED = new Map<string, DocumentNode | GithubErrorEntry[]>();
const VALIDATED_ENTRIES = 200;
/** Longer queries are parsed each time (a cache of them would hold too many bytes). */
const VALIDATED_MAX_LENGTH = 16 * 1024;

/** `query` parsed and validated: the document, or GitHub's errors for it. */
function validated(query: string): DocumentNode | GithubErrorEntry[] {
  const cached = VALIDATED.get(query);
  if (cached) return cached;
  let outcome: DocumentNode | GithubErrorEntry[];
  try {
    const document = parse(query, { maxTokens: MAX_TOKENS });
    const invalid = validate(GITHUB_SCHEMA, document, RULES, { maxErrors: 25 });
    outcome = invalid.length > 0 ? invalid.map((error) => validationEntry(error, document)) : document;
  } catch (error) {
    if (!(error instanceof GraphQLError)) throw error;
    outcome = [parseEntry(error)];
  }
  if (query.length <= VALIDATED_MAX_LENGTH) {
    if (VALIDATED.size >= VALIDATED_ENTRIES) VALIDATED.delete(VALIDATED.keys().next().value as string);
    VALIDATED.set(query, outcome);
  }
  return outcome;
}

/** Parses, validates and checks the limits of `body`: the document to run, or GitHub's error body. */
function prepare(body: GraphqlBody): { document: DocumentNode } | { errors: GithubErrorEntry[] } {
  const document = validated(body.query);
  if (Array.isArray(document)) return { errors: document };
  const operation = getOperationAST(document, body.operationName);
  if (operation) {
    const coerced = getVariableValues(GITHUB_SCHEMA, operation.variableDefinitions ?? [], body.variables);
    if (coerced.errors) return { errors: coerced.errors.map(executionEntry) };
    const limited = limitErrors(GITHUB_SCHEMA, document, operation, coerced.coerced);
    if (limited.length > 0) return { errors: limited.map(executionEntry) };
  }
  return { document };
}

async function answer(deps: RouteDeps, prefix: string, request: FastifyRequest, reply: FastifyReply) {
  const body = readBody(request.body);
  if ('status' in body) return send(reply, body.status, body.body);
  const prepared = prepare(body);
  if ('errors' in prepared) return send(reply, 200, errorsBody(prepared.errors));
  const scope = new RequestScope(deps, request, prefix);
  // A remembered answer (answers.ts) when nothing it read has changed; the imports table's stamp is taken before anything is read.
  const key = scope.rememberable && body.query.length <= VALIDATED_MAX_LENGTH ? answerKey(scope.base, body) : undefined;
  const remembered = key === undefined ? undefined : await rememberedAnswer(deps.database, key);
  if (remembered !== undefined) return send(reply, 200, remembered);
  const registry = key === undefined ? undefined : await registryStamp(deps.database);
  const result = await execute({
    schema: GITHUB_SCHEMA,
    document: prepared.document,
    rootValue: rootValue(scope),
    variableValues: body.variables,
    operationName: body.operationName,
  });
  for (const error of result.errors ?? []) {
    if (error.originalError && !(error.originalError instanceof GraphQLError)) request.log.error({ err: error.originalError }, 'GraphQL resolver failed');
  }
  const errors = result.errors?.map(executionEntry);
  const text = JSON.stringify({ data: result.data ?? null, ...(errors && errors.length > 0 ? { errors } : {}) });
  if (key !== undefined && registry !== undefined && scope.rememberable && !errors?.length) rememberAnswer(deps.database, key, text, { registry, imports: scope.importStamps() });
  return send(reply, 200, text);
}

/**
 * Registers the endpoint in its own scope, whose body parser hands over
 * the raw text (any content type), so that a malformed body is answered
 * in GitHub's shape rather than by Fastify's parser.
 */
export async function graphqlRoutes(server: ApiServer, deps: RouteDeps): Promise<void> {
  const prefix = server.prefix;
  await server.register(async (scope) => {
    scope.removeAllContentTypeParsers();
    scope.addContentTypeParser('*', { parseAs: 'string', bodyLimit: GRAPHQL_BODY_LIMIT }, (_request, text, done) => done(null, text));
    for (const path of ['/graphql', '/api/graphql']) {
      scope.post(path, { schema: { hide: true }, bodyLimit: GRAPHQL_BODY_LIMIT, config: { resource: 'GraphQL' } }, (request, reply) => answer(deps, prefix, request, reply));
    }
  });
}
