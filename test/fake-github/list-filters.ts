/**
 * The parts of GitHub's list filters the fake's routes share (routes.ts):
 * which values a query parameter takes (others are GitHub's 422), the
 * @-mentions of a body, the bound of `sort=long-running`, who holds a permission.
 */

/** The first of `names` whose value is given and not one of `allowed[name]`, if any. */
export function refused(query: URLSearchParams, allowed: Record<string, readonly string[]>): string | undefined {
  return Object.keys(allowed).find((name) => query.has(name) && !(allowed[name] as readonly string[]).includes(query.get(name) as string));
}

/** Logins @-mentioned in Markdown outside code (lower-cased): what `mentioned=` matches, as GitHub links mentions. */
export function mentions(body: string | null): string[] {
  if (!body?.includes('@')) return [];
  const text = body.replace(/```[\s\S]*?(?:```|$)|~~~[\s\S]*?(?:~~~|$)|`[^`\n]*`/g, ' ');
  return [...text.matchAll(/(?:^|[^\w@/`])@([A-Za-z0-9](?:-?[A-Za-z0-9]){0,38})(?![\w/-])/g)].map((m) => (m[1] as string).toLowerCase());
}

/** The start of the month before `now` (UTC): `long-running` pulls are older than it and active since it. */
export function monthBefore(now: number): number {
  const date = new Date(now);
  date.setUTCMonth(date.getUTCMonth() - 1);
  return date.getTime();
}

/** The values `state=` takes on issues, pulls and milestones. */
export const STATES = ['open', 'closed', 'all'];
/** The values `direction=` takes. */
export const DIRECTIONS = ['asc', 'desc'];
/** Per collaborator role, the permissions it holds: what `permission=` of `/collaborators` matches (the payload's `permissions` flags). */
export const PERMISSIONS: Record<string, readonly string[]> = { admin: ['pull', 'triage', 'push', 'maintain', 'admin'], maintain: ['pull', 'triage', 'push', 'maintain'], write: ['pull', 'triage', 'push'], triage: ['pull', 'triage'], read: ['pull'] };
