/**
 * Git LFS pointer files (https://github.com/git-lfs/git-lfs/blob/main/docs/spec.md):
 *
 *     version https://git-lfs.github.com/spec/v1
 *     oid sha256:<64 lower-case hex digits>
 *     size <decimal bytes>
 *
 * each line ended by `\n`, `version` first, the other keys sorted (an
 * extension's `ext-<n>-<name>` lines may come between). git-lfs never reads
 * a blob of 1024 bytes or more as a pointer, and neither does forgesync.
 *
 * Parsing is strict, and what it gives back is safe to use as it is: the
 * oid is exactly 64 hex digits (it names a file on disk and a URL path:
 * nothing else may pass), the size a safe integer without sign or leading
 * zeros. A blob that merely looks like a pointer (the right first line,
 * anything wrong after it) is `invalid`, with the reason, never a pointer.
 */

/** The largest blob git-lfs reads as a pointer (git-lfs's blobSizeCutoff). */
export const MAX_POINTER_BYTES = 1023;
/** The smallest a pointer can be (the three lines with a one-digit size). */
export const MIN_POINTER_BYTES = 'version https://git-lfs.github.com/spec/v1\noid sha256:\nsize 0\n'.length + 64;

/** An LFS object as a pointer names it. */
export interface LfsPointer {
  /** The SHA-256 of the object's content, 64 lower-case hex digits. */
  oid: string;
  size: number;
}

export type PointerParse = { pointer: LfsPointer } | { invalid: string } | { notPointer: true };

const VERSION_LINE = 'version https://git-lfs.github.com/spec/v1';
/** What every pointer starts with; a blob that does not is not a pointer at all. */
const PREFIX = Buffer.from(`${VERSION_LINE}\n`);
const OID = /^sha256:([0-9a-f]{64})$/;
const SIZE = /^(0|[1-9][0-9]{0,15})$/;
const KEY = /^[a-z0-9][a-z0-9.-]*$/;

/** An oid as forgesync accepts one anywhere (paths, URLs, requests): 64 lower-case hex digits. */
export function isOid(value: unknown): value is string {
  return typeof value === 'string' && /^[0-9a-f]{64}$/.test(value);
}

/** Parses `content` (a blob) as an LFS pointer; see the module comment for what passes. */
export function parsePointer(content: Buffer): PointerParse {
  if (content.length > MAX_POINTER_BYTES || !content.subarray(0, PREFIX.length).equals(PREFIX)) return { notPointer: true };
  const text = content.toString('utf8');
  if (!text.endsWith('\n')) return { invalid: 'does not end with a newline' };
  const lines = text.slice(0, -1).split('\n');
  const values = new Map<string, string>();
  let previous = '';
  for (const line of lines.slice(1)) {
    const space = line.indexOf(' ');
    const key = space === -1 ? line : line.slice(0, space);
    if (space === -1 || !KEY.test(key)) return { invalid: `malformed line ${JSON.stringify(line.slice(0, 80))}` };
    if (key <= previous) return { invalid: `key ${key} out of order or repeated` };
    previous = key;
    values.set(key, line.slice(space + 1));
  }
  const oid = OID.exec(values.get('oid') ?? '')?.[1];
  if (!oid) return { invalid: 'the oid is not sha256: and 64 lower-case hex digits' };
  const size = values.get('size') ?? '';
  if (!SIZE.test(size) || !Number.isSafeInteger(Number(size))) return { invalid: 'the size is not a whole number of bytes' };
  return { pointer: { oid, size: Number(size) } };
}

/** The pointer text of an object (what git-lfs commits for it). */
export function pointerText(pointer: LfsPointer): string {
  return `${VERSION_LINE}\noid sha256:${pointer.oid}\nsize ${pointer.size}\n`;
}
