import { globRegex } from '../util/glob.js';
import { InvalidFeedInputError } from './errors.js';

/** The change types a feed can ask for (`--types`); a pattern may end in `*`. */
export const CHANGE_TYPES = ['dev.forgesync.ref.created', 'dev.forgesync.ref.updated', 'dev.forgesync.ref.deleted', 'dev.forgesync.source.state', 'dev.forgesync.import.*'] as const;

const PATTERN = /^[a-z0-9._-]+\*?$|^\*$/;
const GLOB = /^[^\u0000-\u001f]{1,200}$/;

/** What a feed exports: change types (patterns) and a glob over source and import names. */
export interface FeedScope {
  /** Null: every type. */
  types: readonly string[] | null;
  /** Null: every source and import. */
  sources: string | null;
}

/** `--types a,b*` checked. @throws InvalidFeedInputError */
export function parseTypes(value: string | readonly string[] | undefined | null): string[] | null {
  if (value === undefined || value === null) return null;
  const list = (typeof value === 'string' ? value.split(',') : [...value]).map((entry) => entry.trim()).filter((entry) => entry !== '');
  if (list.length === 0) return null;
  for (const entry of list) {
    if (!PATTERN.test(entry) || !(entry === '*' || entry.startsWith('dev.forgesync.'))) {
      throw new InvalidFeedInputError(`change type "${entry.slice(0, 80)}" is not valid; use one of ${CHANGE_TYPES.join(', ')} (a trailing * matches a prefix)`);
    }
  }
  return list;
}

/** `--sources GLOB` checked (`*` any run of characters, `?` one). @throws InvalidFeedInputError */
export function parseSourcesGlob(value: string | undefined | null): string | null {
  if (value === undefined || value === null || value.trim() === '') return null;
  if (!GLOB.test(value)) throw new InvalidFeedInputError('the --sources glob must be 1 to 200 printable characters (* matches any run, ? one character)');
  return value;
}

/** A scope compiled for matching changes in memory. */
export function scopeMatcher(scope: FeedScope): (type: string, name: string) => boolean {
  const types = scope.types?.map(globRegex) ?? null;
  const sources = scope.sources === null ? null : globRegex(scope.sources);
  return (type, name) => (types === null || types.some((pattern) => pattern.test(type))) && (sources === null || sources.test(name));
}
