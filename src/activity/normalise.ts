import { createHash } from 'node:crypto';
import { tmpdir } from 'node:os';

/*
 * Failures are grouped by their message with what differs from one
 * occurrence to the next replaced by placeholders: the credentials in a
 * URL, temp paths, ids, hashes and numbers. "exit code 128 after 3 s" and
 * "exit code 1 after 40 s" are one group; "repository not found" is another.
 */

/** Longest normalised message kept (a group's title). */
const MAX_LENGTH = 300;

const escape = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
const TEMP_ROOTS = [...new Set(['/tmp', '/var/tmp', tmpdir()])].map(escape).join('|');

/** In order: each placeholder is put in before the patterns after it could cut what it covers into pieces. */
const REPLACEMENTS: readonly [RegExp, string][] = [
  // userinfo of a URL (`https://user:token@host`), whatever the scheme.
  [/\b([a-z][a-z0-9+.-]*:\/\/)[^\s/@]+@/gi, '$1<credentials>@'],
  // a path under a temp directory, to the next space, quote or bracket.
  [new RegExp(`(?:${TEMP_ROOTS})/[^\\s'"()\\[\\]<>,;]*`, 'g'), '<tmp>'],
  [/\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b/gi, '<id>'],
  [/\b0x[0-9a-f]+\b/gi, '<hex>'],
  // a hash or hex id: 7 or more hex digits with at least one letter (a plain number is a number).
  [/\b(?=[0-9a-f]*[a-f])[0-9a-f]{7,}\b/gi, '<hash>'],
  [/\d+/g, '<n>'],
  [/\s+/g, ' '],
];

/** The message with its varying parts replaced by placeholders (`<n>`, `<hash>`, `<id>`, `<hex>`, `<tmp>`, `<credentials>`). */
export function normaliseFailure(message: string): string {
  let text = message;
  for (const [pattern, placeholder] of REPLACEMENTS) text = text.replace(pattern, placeholder);
  text = text.trim();
  return text.length > MAX_LENGTH ? `${text.slice(0, MAX_LENGTH - 1)}…` : text;
}

/**
 * A short stable id of a normalised message: how a group is named in URLs
 * (`/api/activity/failures/<group>/resync`). The lines of a git stderr tail
 * (joined by " | ") count as a set: git and the upload-pack or remote helper
 * it runs write to one stderr, and their lines come in either order.
 */
export function failureGroupId(normalised: string): string {
  const lines = [...new Set(normalised.split(' | '))].sort();
  return createHash('sha256').update(lines.join('\n')).digest('hex').slice(0, 16);
}
