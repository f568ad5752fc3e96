/** The relations of a `Link` header GitHub paginates with. */
export interface Links {
  next?: string;
  last?: string;
  prev?: string;
  first?: string;
}

/** Parses `<url>; rel="next", <url>; rel="last"` (unknown relations are ignored). */
export function parseLinks(header: string | undefined): Links {
  const links: Links = {};
  if (!header) return links;
  for (const part of header.split(/,\s*(?=<)/)) {
    const match = /^\s*<([^>]*)>\s*;\s*rel="?([^";]+)"?/.exec(part);
    if (!match) continue;
    for (const rel of match[2]!.trim().split(/\s+/)) {
      if (rel === 'next' || rel === 'last' || rel === 'prev' || rel === 'first') links[rel] = match[1]!;
    }
  }
  return links;
}

/** The `page` query parameter of a URL (1 when absent). */
export function pageOf(url: string): number {
  const page = Number(new URL(url).searchParams.get('page') ?? '1');
  return Number.isInteger(page) && page > 0 ? page : 1;
}
