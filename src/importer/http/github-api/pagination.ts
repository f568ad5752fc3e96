import type { FastifyRequest } from 'fastify';

/** GitHub's page size when the caller names none. */
export const DEFAULT_PER_PAGE = 30;
/** The largest page GitHub serves: `per_page` above it counts as this. */
export const MAX_PER_PAGE = 100;

/** A page of a list: 1-based `page`, `perPage` items. */
export interface Page {
  page: number;
  perPage: number;
}

/** The page a (validated) query asks for, with GitHub's defaults and clamping: `per_page` 0 or less is the default size, `page` 0 or less the first page. */
export function pageOf(query: { page?: number | undefined; per_page?: number | undefined }): Page {
  const perPage = query.per_page === undefined || query.per_page < 1 ? DEFAULT_PER_PAGE : Math.min(query.per_page, MAX_PER_PAGE);
  return { page: query.page === undefined || query.page < 1 ? 1 : query.page, perPage };
}

/** Rows to skip for `page`. */
export function offsetOf(page: Page): number {
  return (page.page - 1) * page.perPage;
}

/**
 * The origin a request reached this server by, `http(s)://<Host>`: links and
 * rewritten attachment URLs point back at it. Behind a proxy FORGESYNC_TRUST_PROXY
 * names, its `X-Forwarded-Proto` and `-Host` (Fastify's `protocol` and `host`);
 * from anyone else only the connection and `Host`. (The server checks that
 * host against the names it answers to before any route runs.)
 */
export function originOf(request: FastifyRequest): string {
  return `${request.protocol}://${request.host || 'localhost'}`;
}

/**
 * GitHub's `Link` header for page `page` of a list of `total` items:
 * absolute URLs of the same path and query with `page` set, in GitHub's
 * order (`prev`, `next`, `last`, `first`); undefined when the whole list is
 * this one page.
 */
export function linkHeader(origin: string, requestUrl: string, page: Page, total: number): string | undefined {
  const last = Math.max(1, Math.ceil(total / page.perPage));
  const at = requestUrl.indexOf('?');
  const path = at < 0 ? requestUrl : requestUrl.slice(0, at);
  const params = new URLSearchParams(at < 0 ? '' : requestUrl.slice(at + 1));
  const link = (number: number, rel: string) => {
    params.set('page', String(number));
    return `<${origin}${path}?${params.toString()}>; rel="${rel}"`;
  };
  const parts: string[] = [];
  // Past the end, `prev` is the last page (as GitHub links it), not the page before the one asked for.
  if (page.page > 1) parts.push(link(Math.min(page.page - 1, last), 'prev'));
  if (page.page < last) parts.push(link(page.page + 1, 'next'), link(last, 'last'));
  if (page.page > 1) parts.push(link(1, 'first'));
  return parts.length > 0 ? parts.join(', ') : undefined;
}
