import type { ArchiveUrls } from './urls.js';

/**
 * What every mapper from GitHub's REST JSON (as the importer stored it) to
 * migration-archive records shares: safe field readers, and the archive
 * URLs records reference each other by.
 */

export type Json = Record<string, unknown>;

export function obj(value: unknown): Json | undefined {
  return value !== null && typeof value === 'object' && !Array.isArray(value) ? (value as Json) : undefined;
}

export function arr(value: unknown): unknown[] {
  return Array.isArray(value) ? value : [];
}

export function str(value: unknown): string | undefined {
  return typeof value === 'string' ? value : undefined;
}

export function int(value: unknown): number | undefined {
  const n = typeof value === 'string' && value.trim() !== '' ? Number(value) : value;
  return typeof n === 'number' && Number.isInteger(n) ? n : undefined;
}

export function orNull(value: unknown): unknown {
  return value === undefined ? null : value;
}

export function enabled(value: unknown): boolean {
  return obj(value)?.enabled === true;
}

/** What the mappers need besides the record: the URLs, and the organization owning the repository (for team URLs). */
export interface MappingContext {
  urls: ArchiveUrls;
  /** The owner's login: teams live in it. */
  org: string;
}

/** A user's archive URL from a REST user object (or null for none, or a deleted user). */
export function userUrl(ctx: MappingContext, user: unknown): string | null {
  const login = str(obj(user)?.login);
  return login ? ctx.urls.user(login) : null;
}

/** A team's archive URL from a REST team object. */
export function teamUrl(ctx: MappingContext, team: unknown): string | null {
  const slug = str(obj(team)?.slug);
  return slug ? ctx.urls.team(ctx.org, slug) : null;
}

export function userUrls(ctx: MappingContext, users: unknown): string[] {
  return arr(users)
    .map((user) => userUrl(ctx, user))
    .filter((url): url is string => url !== null);
}

export function teamUrls(ctx: MappingContext, teams: unknown): string[] {
  return arr(teams)
    .map((team) => teamUrl(ctx, team))
    .filter((url): url is string => url !== null);
}

export function labelUrls(ctx: MappingContext, labels: unknown): string[] {
  const urls: string[] = [];
  for (const label of arr(labels)) {
    const name = typeof label === 'string' ? label : str(obj(label)?.name);
    if (name) urls.push(ctx.urls.label(name));
  }
  return urls;
}

export function milestoneUrl(ctx: MappingContext, milestone: unknown): string | null {
  const number = int(obj(milestone)?.number);
  return number === undefined ? null : ctx.urls.milestone(number);
}
