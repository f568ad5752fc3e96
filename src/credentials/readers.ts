import { matchesAny } from '../util/glob.js';

/**
 * A reader for one team: a read token that sees only the sources and imports
 * whose names match its scope, on every read surface. Defined in the
 * secrets file: `"readers": { "<name>": { "token": "…", "scope": ["team-a/*",
 * "widgets*"] } }` (`*` any run of characters, `?` one).
 */
export interface ScopedReader {
  /** Names the reader in the operator's own files only: never logged with its token. */
  readonly name: string;
  readonly token: string;
  readonly scope: readonly string[];
  /** Whether a source or import of this name is in the reader's scope. */
  sees(name: string): boolean;
}

/** Reader names: like credential names, letters, digits, `_` and `-`. */
const NAME = /^[A-Za-z][A-Za-z0-9_-]{0,63}$/;
/** A reader's token is as long as the admin and read tokens must be. */
const MIN_TOKEN = 16;
// eslint-disable-next-line no-control-regex
const BAD_TOKEN = /[\u0000-\u0020\u007f]/;
// eslint-disable-next-line no-control-regex
const GLOB = /^[^\u0000-\u001f\u007f]{1,200}$/;

/**
 * The secrets file's `readers` object; the messages say what is wrong with
 * which reader (by its place), never a token.
 */
export function parseReaders(value: unknown): ScopedReader[] {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) throw new Error('has "readers" that is not an object of readers by name');
  const readers: ScopedReader[] = [];
  const tokens = new Set<string>();
  let index = 0;
  for (const [name, entry] of Object.entries(value as Record<string, unknown>)) {
    index++;
    const where = `reader ${index}`;
    if (!NAME.test(name)) throw new Error(`has a ${where} whose name is not 1-64 letters, digits, "_" and "-"`);
    const record = entry as { token?: unknown; scope?: unknown } | null;
    if (record === null || typeof record !== 'object' || Array.isArray(record)) throw new Error(`has a ${where} that is not { "token": …, "scope": […] }`);
    const { token, scope } = record;
    if (typeof token !== 'string' || token.length < MIN_TOKEN || BAD_TOKEN.test(token)) {
      throw new Error(`has a ${where} whose token is not at least ${MIN_TOKEN} characters without whitespace or control characters`);
    }
    if (tokens.has(token)) throw new Error(`has a ${where} with the token of another reader`);
    tokens.add(token);
    if (!Array.isArray(scope) || scope.length === 0 || scope.length > 100 || !scope.every((glob) => typeof glob === 'string' && GLOB.test(glob))) {
      throw new Error(`has a ${where} whose scope is not a list of 1 to 100 globs (e.g. ["team-a/*"])`);
    }
    const globs = [...scope] as string[];
    readers.push({ name, token, scope: globs, sees: matchesAny(globs) });
  }
  return readers;
}
