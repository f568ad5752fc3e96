/** Query parameters whose values are secrets, whatever else the name says (`password`, `access_token`, `sig`…). */
const SECRET_PARAMETER = /pass|pwd|secret|token|key|auth|sig|credential/i;
const SCHEME = /^[a-z][a-z0-9+.-]*:\/\//i;

/**
 * Removes credentials from a URL so it can be shown or logged, by parsing it
 * (a password may contain `@`, `:` or `%`): `https://user:secret@host/x` →
 * `https://user:***@host/x`; a user name alone may be a token, so
 * `https://ghp_token@host/x` → `https://***@host/x`; values of query
 * parameters such as `password=` or `access_token=` → `***`. Strings that are
 * not URLs are returned unchanged; a URL-like string the parser refuses has
 * everything up to the last `@` of its authority replaced.
 */
export function redactUrl(value: string): string {
  if (typeof value !== 'string' || !SCHEME.test(value)) return value;
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return value.replace(/^([a-z][a-z0-9+.-]*:\/\/)[^/?#]*@/i, '$1***@');
  }
  if (url.password) url.password = '***';
  else if (url.username) url.username = '***';
  for (const name of [...url.searchParams.keys()]) {
    if (SECRET_PARAMETER.test(name)) url.searchParams.set(name, '***');
  }
  // Only what was there: URL adds a trailing slash to a bare origin.
  return url.href.endsWith('/') && !value.split(/[?#]/)[0]!.endsWith('/') && url.pathname === '/' ? url.href.slice(0, -1) : url.href;
}

/** Replaces every occurrence of each secret in `text` with `***`. */
export function redactSecrets(text: string, secrets: Iterable<string | undefined>): string {
  let out = text;
  for (const secret of secrets) {
    if (secret && secret.length >= 4) out = out.split(secret).join('***');
  }
  return out;
}
