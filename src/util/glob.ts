/**
 * Name globs, as feeds' `--sources` and readers' scopes write them: `*`
 * matches any run of characters (slashes included: `team-a/*` is all of
 * team-a's), `?` one character, everything else itself.
 */
export function globRegex(glob: string): RegExp {
  const escaped = glob.replace(/[.+^${}()|[\]\\]/g, '\\$&').replace(/\*/g, '.*').replace(/\?/g, '.');
  return new RegExp(`^${escaped}$`);
}

/** Whether a name matches any of `globs`. */
export function matchesAny(globs: readonly string[]): (name: string) => boolean {
  const patterns = globs.map(globRegex);
  return (name) => patterns.some((pattern) => pattern.test(name));
}
