import { InvalidInputError } from '../errors.js';

/** A source name is not acceptable. */
export class InvalidSourceNameError extends InvalidInputError {}

/** One segment of a name: starts with a letter or digit (never a dot: no `.git`, `..` or hidden directory). */
const SEGMENT = /^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$/;
/** The longest name, slashes included: deep enough for forge paths such as `group/subgroup/project`. */
const MAX_NAME = 200;

/**
 * Source names: segments of `A-Z a-z 0-9 . _ -` separated by single `/`
 * (`team-a/api`, as forge paths go), each starting with a letter or digit,
 * never `..`; 200 characters at most. A name is never a path by itself:
 * mirrors live in a directory named after the source's id and its
 * sanitised name (git/paths.ts), so a slash never makes a directory.
 */
export function validateSourceName(name: string): string {
  const valid = typeof name === 'string' && name.length <= MAX_NAME && !name.includes('..') && name.split('/').every((segment) => SEGMENT.test(segment));
  if (!valid) {
    throw new InvalidSourceNameError(
      `source name ${JSON.stringify(String(name).slice(0, 60))} is not valid: use segments of letters, digits, ".", "_" or "-" separated by "/", each starting with a letter or digit, without "..", 200 characters at most (e.g. team-a/api)`,
    );
  }
  return name;
}

/** The default name of a source: the last path segment of its URL, without `.git`. */
export function nameFromUrl(url: string): string {
  const last = url.replace(/[/\\]+$/, '').split(/[/:\\]/).pop() ?? '';
  const name = last.replace(/\.git$/i, '').replace(/[^A-Za-z0-9._-]+/g, '-').replace(/\.{2,}/g, '.').replace(/^[._-]+/, '').slice(0, 100);
  return name || 'repository';
}
