import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { parseHostBinding } from '../../src/credentials/hosts.js';
import { validateCredentialName } from '../../src/credentials/store.js';
import { nameFromUrl, validateSourceName } from '../../src/replication/names.js';
import { attempt, check, CONTROL, hostileString, hostileUnit, piece } from './arbitraries.js';

/** Cases per property of this file. */
const SOURCE_NAME_RUNS = 20_000;
const CREDENTIAL_NAME_RUNS = 20_000;
const HOST_BINDING_RUNS = 20_000;

/** Names close to valid ones: letters and digits with the dangerous pieces mixed in. */
const nameLike = fc.oneof(
  hostileString({ maxLength: 12, long: 400 }),
  fc.array(fc.oneof(fc.stringMatching(/^[A-Za-z0-9._-]{1,8}$/), piece, hostileUnit), { maxLength: 8 }).map((parts) => parts.join('')),
  fc.stringMatching(/^[A-Za-z0-9][A-Za-z0-9._-]{0,120}$/),
  fc.array(fc.oneof(fc.stringMatching(/^[A-Za-z0-9][A-Za-z0-9._-]{0,30}$/), fc.constantFrom('', '.', '..', '.git', '-x')), { minLength: 1, maxLength: 9 }).map((parts) => parts.join('/')),
);

/** The documented pattern: segments separated by single slashes, each starting with a letter or digit, 200 characters at most. */
const DOCUMENTED = /^[A-Za-z0-9][A-Za-z0-9._-]{0,99}(?:\/[A-Za-z0-9][A-Za-z0-9._-]{0,99})*$/;

describe(`validateSourceName (${SOURCE_NAME_RUNS} cases per property)`, () => {
  it('returns the name unchanged only when it matches the documented pattern and has no "..", else refuses naming the source name', () => {
    check(
      fc.property(nameLike, (name) => {
        const outcome = attempt(() => validateSourceName(name), /source name/i);
        if (!outcome.ok) {
          // Refused names are cut in the message: it never grows with the input.
          expect(outcome.error.message.length).toBeLessThan(600);
          return;
        }
        expect(outcome.value).toBe(name);
        expect(name).toMatch(DOCUMENTED);
        expect(name.length).toBeLessThanOrEqual(200);
        expect(name).not.toContain('..');
      }),
      SOURCE_NAME_RUNS,
    );
  });

  it('accepts every name of the documented pattern without ".." (it is not stricter than documented)', () => {
    const valid = fc.stringMatching(DOCUMENTED).filter((name) => name.length <= 200 && !name.includes('..'));
    check(
      fc.property(valid, (name) => {
        expect(validateSourceName(name)).toBe(name);
      }),
      SOURCE_NAME_RUNS,
    );
  });

  it('the default name derived from any URL is a valid source name', () => {
    check(
      fc.property(nameLike, (url) => {
        expect(validateSourceName(nameFromUrl(url))).toBe(nameFromUrl(url));
      }),
      SOURCE_NAME_RUNS,
    );
  });
});

describe(`validateCredentialName (${CREDENTIAL_NAME_RUNS} cases per property)`, () => {
  const referenceLike = fc.oneof(
    nameLike,
    fc.tuple(fc.constantFrom('env:', 'file:', 'ENV:', 'vault:', 'file://', ''), hostileString({ maxLength: 8 })).map(([a, b]) => a + b),
    fc.stringMatching(/^[A-Za-z][A-Za-z0-9_]{0,70}$/),
  );

  it('returns a name of 1-64 letters, digits and "_" starting with a letter, or refuses naming the credential reference', () => {
    check(
      fc.property(referenceLike, (reference) => {
        const outcome = attempt(() => validateCredentialName(reference), /credential/i);
        if (!outcome.ok) {
          expect(outcome.error.message.length).toBeLessThan(1000);
          return;
        }
        expect(outcome.value).toBe(reference);
        expect(reference).toMatch(/^[A-Za-z][A-Za-z0-9_]{0,63}$/);
        expect(reference).not.toMatch(/^(env|file):/i);
      }),
      CREDENTIAL_NAME_RUNS,
    );
  });

  it('never echoes a long reference whole (a secret pasted as the reference is cut to its first characters)', () => {
    const pasted = fc.stringMatching(/^[A-Za-z0-9_-]{41,80}$/).map((secret) => `env:${secret}`);
    check(
      fc.property(pasted, (reference) => {
        const outcome = attempt(() => validateCredentialName(reference), /credential/i);
        expect(outcome.ok).toBe(false);
        if (!outcome.ok) expect(outcome.error.message).not.toContain(reference);
      }),
      CREDENTIAL_NAME_RUNS,
    );
  });
});

describe(`parseHostBinding (${HOST_BINDING_RUNS} cases per property)`, () => {
  const hostLike = fc.oneof(
    hostileString({ maxLength: 10, long: 300 }),
    fc.tuple(
      fc.constantFrom('', 'https://', 'HTTP://', 'http://', 'ssh://', 'ftp://', 'https:/'),
      fc.oneof(fc.domain(), fc.ipV4(), fc.ipV6().map((ip) => `[${ip}]`), fc.constantFrom('GitHub.COM', 'bücher.example', 'localhost', '0x7f.1', '%67ithub.com')),
      fc.oneof(fc.constant(''), fc.integer({ min: -1, max: 70_000 }).map((port) => `:${port}`), fc.constantFrom(':', ':0443', ':+1', ':1e3')),
      fc.oneof(fc.constant(''), piece),
      fc.constantFrom('', '', '/', '//'),
    ).map(([scheme, host, port, tail, slash]) => scheme + host + port + tail + slash),
  );

  it('returns a lower-case host name without user, path or whitespace, a port from 0 to 65535 (or null) and the http(s) scheme written (or null), or refuses naming the host', () => {
    check(
      fc.property(hostLike, (entry) => {
        const outcome = attempt(() => parseHostBinding(entry), /host/i);
        if (!outcome.ok) return;
        const { hostname, port, scheme } = outcome.value;
        // Only a host and a port, after an http(s):// the scheme is read from (and one trailing "/"):
        // an entry with a user, a path, a query or spaces inside is not one.
        const written = /^(https?):\/\//i.exec(entry.trim());
        expect(scheme).toBe(written ? written[1]!.toLowerCase() : null);
        expect(entry.trim().slice(written ? written[0].length : 0).replace(written ? /\/$/ : /^$/, '')).not.toMatch(/[@/?#\s]/u);
        expect(hostname).not.toBe('');
        expect(hostname).toBe(hostname.toLowerCase());
        expect(hostname).not.toMatch(/[@/\\?#\s]/u);
        expect(CONTROL.test(hostname)).toBe(false);
        if (port !== null) {
          expect(Number.isInteger(port)).toBe(true);
          expect(port).toBeGreaterThanOrEqual(0);
          expect(port).toBeLessThanOrEqual(65535);
        }
        // The binding is what a URL to that host parses to: it compares equal to a connection's host.
        expect(new URL(`https://${hostname}/`).hostname).toBe(hostname);
      }),
      HOST_BINDING_RUNS,
    );
  });
});
