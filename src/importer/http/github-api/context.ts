import type { FastifyReply, FastifyRequest } from 'fastify';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { notFound } from './errors.js';
import { findImport, type ApiDatabase, type ImportRef, type ListResult } from '../../store/read-api.js';
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

/** The import `/repos/{owner}/{repo}` names, with its attachment links; 404 when there is none. */
export async function repoContext(
  deps: RouteDeps,
  request: FastifyRequest,
  prefix: string,
  params: { owner: string; repo: string },
): Promise<RepoContext> {
  const imported = await findImport(deps.database, params.owner, params.repo, (name) => inScope(request, name));
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
