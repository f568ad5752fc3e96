import type { FastifyReply, FastifyRequest, RouteShorthandOptions } from 'fastify';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { z } from 'zod';
import { RepositoryIdParams } from './schemas.js';
import { notFound } from './errors.js';
import { findImport, findImportByRepositoryId, type ApiDatabase, type ImportRef, type ListResult } from '../../store/read-api.js';
import { linkHeader, originOf, type Page } from './pagination.js';
import { sendJson } from './respond.js';
import type { AttachmentLinks, AttachmentRewriter } from './rewrite.js';
import { ApiLinks, publicBase, renderLinks } from './links.js';
import { inScope } from '../../../server/auth.js';

/** The plugin's server: Fastify with zod schemas. */
export type ApiServer = Parameters<FastifyPluginAsyncZod>[0];

/** What the routes read from. */
export interface RouteDeps {
  database: ApiDatabase;
  links: AttachmentLinks;
  /** FORGESYNC_PUBLIC_URL: the copy's base for every link answered (absent: the request's origin). */
  publicUrl?: string | undefined;
}

/** The OpenAPI tag of every route of the GitHub-compatible API. */
export const TAG = 'github';

/** The imported repository a request reads, and how to render its JSON for this request. */
export class RepoContext {
  /** `<copy's base><prefix>`: where rewritten API and attachment links point. */
  readonly base: string;
  readonly #links: ApiLinks;

  constructor(
    readonly imported: ImportRef,
    /** The copy's base (FORGESYNC_PUBLIC_URL, else the request's origin): `Link` headers point below it. */
    readonly origin: string,
    prefix: string,
    private readonly rewriter: AttachmentRewriter | null,
  ) {
    this.base = origin + prefix;
    this.#links = new ApiLinks(imported.apiUrl, this.base);
  }

  /** Stored JSON text as answered: parsed, its API links and attachment URLs pointed at the copy. */
  render(data: string): Record<string, unknown> {
    return renderLinks(JSON.parse(data) as Record<string, unknown>, { links: this.#links, attachments: this.rewriter, base: this.base });
  }
}

/** The copy's base as this request sees it: FORGESYNC_PUBLIC_URL when set, else the request's origin (`http://host:port`). */
export function copyOrigin(deps: Pick<RouteDeps, 'publicUrl'>, request: FastifyRequest): string {
  return publicBase(deps.publicUrl, originOf(request));
}

/** How a repository route's path names the repository: `/repos/{owner}/{repo}`, or `/repositories/{repository_id}` (GitHub's id). */
export type RepoLocator = { owner: string; repo: string } | { repository_id: number };

/**
 * The import a repository route's path names (either form of RepoLocator),
 * with its attachment links; 404 when there is none the caller may see.
 */
export async function repoContext(deps: RouteDeps, request: FastifyRequest, prefix: string, params: RepoLocator): Promise<RepoContext> {
  const sees = (name: string) => inScope(request, name);
  const imported =
    'repository_id' in params
      ? await findImportByRepositoryId(deps.database, params.repository_id, sees)
      : await findImport(deps.database, params.owner, params.repo, sees);
  if (!imported) throw notFound();
  const rewriter = await deps.links.forImport(imported.id, imported.name);
  return new RepoContext(imported, copyOrigin(deps, request), prefix, rewriter);
}

/** Answers `items`, page `page` of a list of `total`, with GitHub's `Link` header (below the copy's base). */
export function sendItems(request: FastifyRequest, reply: FastifyReply, context: RepoContext, items: unknown[], total: number, page: Page): FastifyReply {
  return sendJson(request, reply, items, linkHeader(context.origin, request.url, page, total));
}

/** Answers one page of stored objects: rendered (then `map`ped), with GitHub's `Link` header. */
export function sendPage(
  request: FastifyRequest,
  reply: FastifyReply,
  context: RepoContext,
  result: ListResult,
  page: Page,
  map?: (item: Record<string, unknown>) => Record<string, unknown>,
): FastifyReply {
  const items = result.data.map((data) => (map ? map(context.render(data)) : context.render(data)));
  return sendItems(request, reply, context, items, result.total, page);
}

/** Route options every route shares: the tag, the bearer security, and the resource its 422s name. */
export function routeOptions<const S extends Record<string, unknown>>(resource: string, summary: string, schema: S) {
  return {
    schema: { tags: [TAG], summary, security: [{ bearer: [] as string[] }], ...schema },
    config: { resource },
  };
}

/** The zod schemas of a repository route: its params include `owner` and `repo` (e.g. `IssueParams`). */
interface RepoRouteSchema {
  params: z.ZodObject<{ owner: z.ZodString; repo: z.ZodString }>;
  querystring?: z.ZodType;
}

/** A repository route's params as its handler sees them: its own, with the repository named by either form. */
export type RepoRouteParams<S extends RepoRouteSchema> = Omit<z.output<S['params']>, 'owner' | 'repo'> & RepoLocator;

/** A repository route's request: validated params (RepoRouteParams) and query. */
export type RepoRequest<S extends RepoRouteSchema> = FastifyRequest<{
  Params: RepoRouteParams<S>;
  Querystring: S extends { querystring: infer Q extends z.ZodType } ? z.output<Q> : unknown;
}>;

/**
 * Registers a repository route once for both of GitHub's forms of its path:
 * `/repos/:owner/:repo<path>` and `/repositories/:repository_id<path>`
 * (GitHub's own `Link` headers use the second). Inputs: the server, the path
 * after the repository (`''` for the repository itself, `/issues/:issue_number`,
 * …), routeOptions(…) whose `params` schema has `owner` and `repo`, and the
 * handler, which passes `request.params` to repoContext whatever the form.
 * The id form takes the same params with `repository_id` in place of
 * `owner`/`repo`, and is left out of the OpenAPI document (one entry per
 * route).
 */
export function repoRoute<S extends RepoRouteSchema>(
  server: ApiServer,
  path: string,
  options: { schema: S & Record<string, unknown>; config: { resource: string } },
  handler: (request: RepoRequest<S>, reply: FastifyReply) => Promise<unknown>,
): void {
  const byId = options.schema.params.omit({ owner: true, repo: true }).extend(RepositoryIdParams.shape);
  // The handler reads params through RepoLocator, which both forms satisfy; Fastify's own typing cannot say "either".
  const untyped = handler as unknown as (request: FastifyRequest, reply: FastifyReply) => Promise<unknown>;
  const register = (url: string, schema: object) => server.get(url, { schema, config: options.config } as RouteShorthandOptions, untyped);
  register(`/repos/:owner/:repo${path}`, options.schema);
  register(`/repositories/:repository_id${path}`, { ...options.schema, params: byId, hide: true });
}
