import { InvalidSnapshotRequestError } from './errors.js';

const MAX_REVISION_LENGTH = 255;
const MAX_PATH_LENGTH = 4096;
const OBJECT_ID = /^([0-9a-f]{40}|[0-9a-f]{64})$/;
const ABBREVIATED_ID = /^[0-9a-f]{7,64}$/i;
// git check-ref-format's rules, one level allowed (`main`): no control characters,
// space, ~ ^ : ? * [ \, no `..`, `@{`, `//`, no component starting with `.` or
// ending with `.lock`, no leading `-` or `/`, no trailing `/` or `.`.
// eslint-disable-next-line no-control-regex
const BAD_REF = /[\u0000-\u0020\u007f~^:?*[\\]|\.\.|@\{|\/\/|\.lock(\/|$)|(^|\/)\.|^[-/]|[/.]$/;

/** True for a full object id (40 hex digits, or 64 in a sha256 repository). */
export function isObjectId(text: string): boolean {
  return OBJECT_ID.test(text);
}

/**
 * Checks a branch, tag, full ref name or (possibly abbreviated) commit id given by
 * a caller; the result is safe to hand to git as a revision: it cannot carry
 * `:path`, `^`, `..` ranges, reflog syntax or options.
 * @throws InvalidSnapshotRequestError naming what is wrong.
 */
export function validateRevision(revision: unknown): string {
  if (typeof revision !== 'string' || revision.length === 0) throw new InvalidSnapshotRequestError('a ref (branch, tag or commit sha) is required');
  if (revision.length > MAX_REVISION_LENGTH) throw new InvalidSnapshotRequestError(`ref is longer than ${MAX_REVISION_LENGTH} characters`);
  if (ABBREVIATED_ID.test(revision)) return revision;
  if (revision === '@' || BAD_REF.test(revision)) {
    throw new InvalidSnapshotRequestError(`${JSON.stringify(revision)} is not a valid branch, tag or commit sha`);
  }
  return revision;
}

/**
 * Checks a path inside a commit (`src/main.ts`; empty for the root) and returns it
 * normalised (no leading, trailing or doubled slashes).
 * @throws InvalidSnapshotRequestError for `.`/`..` components, absolute paths, NUL or newlines.
 */
export function validateTreePath(path: unknown): string {
  if (typeof path !== 'string') throw new InvalidSnapshotRequestError('path must be a string');
  if (path.length > MAX_PATH_LENGTH) throw new InvalidSnapshotRequestError(`path is longer than ${MAX_PATH_LENGTH} characters`);
  if (/[\0\n\r]/.test(path)) throw new InvalidSnapshotRequestError('path must not contain NUL or line breaks');
  if (path.startsWith('/')) throw new InvalidSnapshotRequestError(`${JSON.stringify(path)} is absolute; give a path relative to the repository root`);
  const parts = path.split('/').filter((part) => part.length > 0);
  if (parts.some((part) => part === '.' || part === '..')) {
    throw new InvalidSnapshotRequestError(`path ${JSON.stringify(path)} contains "." or ".." components`);
  }
  return parts.join('/');
}

/** Splits `forgesync show`'s `<rev>:<path>` argument. */
export function parseObjectSpec(spec: string): { revision: string; path: string } {
  const colon = spec.indexOf(':');
  if (colon <= 0) throw new InvalidSnapshotRequestError(`expected <ref>:<path>, got ${JSON.stringify(spec)}`);
  return { revision: validateRevision(spec.slice(0, colon)), path: validateTreePath(spec.slice(colon + 1)) };
}
