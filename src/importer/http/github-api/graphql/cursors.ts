import type { KeysetPosition } from '../../../store/graphql-reads.js';
import { githubError } from './errors.js';

/*
 * Connection cursors: opaque to clients (base64 of a versioned prefix and
 * a JSON position), as GitHub's are. A keyset cursor holds the position in
 * the order (sort value and id); a list cursor the index in a short list
 * read whole.
 */

const PREFIX = 'cursor:forgesync:v1:';

function encode(value: unknown): string {
  return Buffer.from(PREFIX + JSON.stringify(value)).toString('base64');
}

/** The decoded JSON of a cursor; GitHub's INVALID_CURSOR_ARGUMENTS error for anything that is not one of ours. */
function decode(cursor: string): unknown {
  const text = Buffer.from(cursor, 'base64').toString('utf8');
  if (text.startsWith(PREFIX)) {
    try {
      return JSON.parse(text.slice(PREFIX.length)) as unknown;
    } catch {
      // falls through to the error below
    }
  }
  throw githubError('INVALID_CURSOR_ARGUMENTS', `\`${cursor}\` does not appear to be a valid cursor.`);
}

/** What a keyset cursor holds: the position, and the item's ordinal in the order (1-based) when it was read forwards from the start. */
export interface KeysetMark {
  position: KeysetPosition;
  ordinal?: number | undefined;
}

/** The cursor of a keyset position (and ordinal). */
export function keysetCursor(mark: KeysetMark): string {
  return encode({ v: mark.position.value, k: mark.position.key, ...(mark.ordinal === undefined ? {} : { n: mark.ordinal }) });
}

/** The position (and ordinal) a keyset cursor holds. */
export function keysetMark(cursor: string): KeysetMark {
  const value = decode(cursor) as { v?: unknown; k?: unknown; n?: unknown } | null;
  const valid = value !== null && typeof value === 'object' && typeof value.k === 'number' && (value.v === null || typeof value.v === 'string' || typeof value.v === 'number');
  if (!valid) throw githubError('INVALID_CURSOR_ARGUMENTS', `\`${cursor}\` does not appear to be a valid cursor.`);
  const ordinal = typeof value.n === 'number' && Number.isInteger(value.n) && value.n > 0 ? value.n : undefined;
  return { position: { value: value.v as string | number | null, key: value.k as number }, ordinal };
}

/** The cursor of the item at `index` of a list read whole. */
export function indexCursor(index: number): string {
  return encode({ i: index });
}

/** The index a list cursor holds. */
export function cursorIndex(cursor: string): number {
  const value = decode(cursor) as { i?: unknown } | null;
  if (value === null || typeof value !== 'object' || typeof value.i !== 'number' || !Number.isInteger(value.i) || value.i < 0) {
    throw githubError('INVALID_CURSOR_ARGUMENTS', `\`${cursor}\` does not appear to be a valid cursor.`);
  }
  return value.i;
}
