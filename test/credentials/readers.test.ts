import { describe, expect, it } from 'vitest';
import { parseReaders } from '../../src/credentials/readers.js';

const TOKEN = 'reader-token-0123456789abcdef';

describe('scoped readers in the secrets file', () => {
  it('matches names by the scope globs: * any run (slashes too), ? one character', () => {
    const [reader] = parseReaders({ 'team-a': { token: TOKEN, scope: ['team-a/*', 'widgets?'] } });
    expect(reader!.name).toBe('team-a');
    expect(['team-a/api', 'team-a/x/y', 'widgets1'].filter(reader!.sees)).toEqual(['team-a/api', 'team-a/x/y', 'widgets1']);
    expect(['team-b/api', 'team-a', 'widgets', 'widgets12', 'xteam-a/api'].filter(reader!.sees)).toEqual([]);
    // Regular-expression characters in a glob are themselves.
    const [dotted] = parseReaders({ dots: { token: TOKEN, scope: ['a.b'] } });
    expect(dotted!.sees('a.b')).toBe(true);
    expect(dotted!.sees('axb')).toBe(false);
  });

  it('refuses a malformed reader with a message naming its place, never its token', () => {
    const cases: Array<[unknown, RegExp]> = [
      [[], /not an object/],
      [{ 'team a': { token: TOKEN, scope: ['x'] } }, /reader 1 whose name/],
      [{ a: { token: 'short', scope: ['x'] } }, /reader 1 whose token is not at least 16/],
      [{ a: { token: `${TOKEN} x`, scope: ['x'] } }, /reader 1 whose token/],
      [{ a: { token: TOKEN, scope: [] } }, /reader 1 whose scope/],
      [{ a: { token: TOKEN, scope: 'team-a/*' } }, /reader 1 whose scope/],
      [{ a: { token: TOKEN, scope: ['x'] }, b: { token: TOKEN, scope: ['y'] } }, /reader 2 with the token of another reader/],
      [{ a: { secret: TOKEN, scope: ['x'] } }, /reader 1 whose token/],
    ];
    for (const [value, message] of cases) {
      let error: Error | undefined;
      try {
        parseReaders(value);
      } catch (caught) {
        error = caught as Error;
      }
      expect(error?.message).toMatch(message);
      expect(error?.message).not.toContain(TOKEN);
    }
  });
});
