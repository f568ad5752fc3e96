/** `type/subtype` with optional parameters, as RFC 9110 allows them; anything else is served as bytes. */
const MEDIA_TYPE = /^[\w!#$&^.+-]+\/[\w!#$&^.+-]+(?:\s*;\s*[\w!#$&^.+-]+=(?:[\w!#$&^.+-]+|"[^"\\\r\n]*"))*$/;
/** Control characters (C0, DEL, C1) and path separators: never part of a stored file name. */
const UNSAFE_IN_NAME = /[\u0000-\u001f\u007f-\u009f/\\]/g;
const MAX_NAME_CHARACTERS = 255;

/** A content type as upstream gave it, or `application/octet-stream` when it is missing, malformed or longer than 255 characters. */
export function safeContentType(contentType: string | null | undefined): string {
  const value = contentType?.trim() ?? '';
  return value.length <= 255 && MEDIA_TYPE.test(value) ? value : 'application/octet-stream';
}

/**
 * The name a downloaded file is stored under: the URL's last path segment,
 * percent-decoded (as written when its escapes are not UTF-8), control
 * characters and path separators replaced with `_`, at most 255 characters;
 * `file` when nothing is left. Any URL gives a name, never an error.
 */
export function fileNameOf(url: URL): string {
  const segment = url.pathname.split('/').pop() ?? '';
  let name: string;
  try {
    name = decodeURIComponent(segment);
  } catch {
    // `%E0%A4%A`, `%zz`: not an escape of UTF-8, kept as it is written.
    name = segment;
  }
  name = name.replace(UNSAFE_IN_NAME, '_');
  const characters = Array.from(name);
  if (characters.length > MAX_NAME_CHARACTERS) name = characters.slice(0, MAX_NAME_CHARACTERS).join('');
  return name.trim() === '' ? 'file' : name;
}
