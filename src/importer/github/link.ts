/** The relations of a `Link` header GitHub paginates with. */
export interface Links {
  next?: string;
  last?: string;
  prev?: string;
  first?: string;
}

/**
 * Parses `<url>; rel="next", <url>; rel="last"` (unknown relations are
 * ignored). The header comes from the API host, whatever it is: any text
 * gives some links (possibly none), never an error, in time linear in its
 * length (Node's HTTP parser caps a header block at 16 KiB anyway).
 */
export function parseLinks(header: string | undefined): Links {
  const links: Links = {};
  if (typeof header !== 'string' || !header) return links;
  for (const part of header.split(/,\s*(?=<)/)) {
    const match = /^\s*<([^>]*)>\s*;\s*rel="?([^";]+)"?/.exec(part);
    if (!match) continue;
    for (const rel of match[2]!.trim().split(/\s+/)) {
      if (rel === 'next' || rel === 'last' || rel === 'prev' || rel === 'first') links[rel] = match[1]!;
    }
  }
  return links;
}

/**
 * The highest page number taken from a link: GitHub's lists end after a few
 * hundred pages, and a page walk believes far fewer (see run/walk.ts); this
 * only keeps every number an exact integer.
 */
export const MAX_LINK_PAGE = 999_999_999_999;

/**
 * The `page` query parameter of a link URL: an integer from 1 to
 * MAX_LINK_PAGE (more is taken as MAX_LINK_PAGE), 1 when absent or not a
 * page number, and 1 for a URL that does not parse (a link is upstream
 * text: it never throws).
 */
export function pageOf(url: string): number {
  let raw: string | null;
  try {
    raw = new URL(url).searchParams.get('page');
  } catch {
    return 1;
  }
  const digits = /^\s*0*(\d{1,16})\s*$/.exec(raw ?? '')?.[1];
  if (digits === undefined) return /^\s*\d{17,}\s*$/.test(raw ?? '') ? MAX_LINK_PAGE : 1;
  const page = Number(digits);
  return page < 1 ? 1 : Math.min(page, MAX_LINK_PAGE);
}
