/**
 * Removes credentials from a URL-like string so it can be shown or logged:
 * `https://user:secret@host/x` → `https://user:***@host/x`,
 * `https://ghp_token@host/x` → `https://***@host/x`.
 * Strings that are not URLs are returned unchanged.
 */
export function redactUrl(value: string): string {
  return value.replace(/^([a-z][a-z0-9+.-]*:\/\/)([^/@\s]*)@/i, (_all, scheme: string, userinfo: string) => {
    const colon = userinfo.indexOf(':');
    if (colon === -1) return `${scheme}***@`;
    return `${scheme}${userinfo.slice(0, colon)}:***@`;
  });
}

/** Replaces every occurrence of each secret in `text` with `***`. */
export function redactSecrets(text: string, secrets: Iterable<string | undefined>): string {
  let out = text;
  for (const secret of secrets) {
    if (secret && secret.length >= 4) out = out.split(secret).join('***');
  }
  return out;
}
