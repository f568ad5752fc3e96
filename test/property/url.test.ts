import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { KNOWN_PROTOCOLS, MAX_URL_LENGTH, parseProtocols, validateRemoteUrl } from '../../src/git/url.js';
import { attempt, check, hostileString, hostileUnit, piece } from './arbitraries.js';

/** Cases per property of this file. */
const URL_RUNS = 20_000;
const PROTOCOL_RUNS = 10_000;

const protocolSets = fc.subarray([...KNOWN_PROTOCOLS], { minLength: 1 }).map((list) => new Set(list) as ReadonlySet<string>);

/** A URL-shaped hostile string: scheme, user info, host, port and path, each drawn from the dangerous pieces. */
const urlShaped = fc
  .tuple(
    fc.constantFrom('', 'https://', 'HTTPS://', 'http://', 'ssh://', 'git://', 'file://', 'git+ssh://', 'ssh+git://', 'ftp://', 'ext::', 'x::', 'file:', '-', '--', '/', './', '../'),
    fc.oneof(fc.constant(''), fc.array(fc.oneof(piece, fc.constantFrom('git', 'alice', 'u', 'p')), { maxLength: 3 }).map((parts) => `${parts.join('')}@`)),
    fc.oneof(fc.constantFrom('github.com', 'example.com', '[::1]', '127.0.0.1', 'localhost', '-oProxyCommand=x', '%2doProxyCommand=x', '', 'h'), hostileString({ maxLength: 4, long: 300 })),
    fc.oneof(fc.constant(''), fc.constantFrom(':', ':22', ':443', ':0', ':65536', ':-1', ':x')),
    fc.oneof(fc.constantFrom('', '/', ':', '/owner/repo.git', ':owner/repo.git', ':-x', '/-x', ':/-x'), fc.array(hostileUnit, { maxLength: 8 }).map((units) => units.join(''))),
  )
  .map((parts) => parts.join(''));

const anyUrl = fc.oneof({ weight: 3, arbitrary: urlShaped }, { weight: 2, arbitrary: hostileString({ long: 3000 }) });

/** git's kind of transport for a URL that forgesync accepted: scheme URLs by scheme, absolute paths local, the rest scp-like ssh. */
function transportOf(url: string): string {
  const scheme = /^([A-Za-z][A-Za-z0-9+.-]*):\/\//.exec(url)?.[1]?.toLowerCase();
  if (scheme !== undefined) return scheme === 'git+ssh' || scheme === 'ssh+git' ? 'ssh' : scheme;
  return url.startsWith('/') ? 'file' : 'ssh';
}

/** User, host and path of an scp-like `[user@]host:path` (host possibly `[...]`), as git splits it. */
function scpParts(url: string): { user: string; host: string; path: string } {
  const bracketed = /^(?:([^@/]*)@)?\[([^\]/]*)\]:(.*)$/s.exec(url);
  if (bracketed) return { user: bracketed[1] ?? '', host: bracketed[2] ?? '', path: bracketed[3] ?? '' };
  const colon = url.indexOf(':');
  const authority = url.slice(0, colon);
  const at = authority.lastIndexOf('@');
  return { user: at === -1 ? '' : authority.slice(0, at), host: authority.slice(at + 1), path: url.slice(colon + 1) };
}

/** The invariants of a URL validateRemoteUrl returned. */
function expectSafeUrl(result: string, protocols: ReadonlySet<string>): void {
  expect(result.length).toBeGreaterThan(0);
  expect(result.startsWith('-'), 'starts with "-"').toBe(false);
  expect(/^[A-Za-z0-9+.-]*::/.test(result), 'remote-helper syntax').toBe(false);
  // eslint-disable-next-line no-control-regex
  expect(/[\u0000-\u0020\u007f-\u009f]/.test(result), 'control characters or spaces').toBe(false);
  const transport = transportOf(result);
  expect(protocols.has(transport), `protocol ${transport} outside ${[...protocols].join(',')}`).toBe(true);
  if (/^[A-Za-z][A-Za-z0-9+.-]*:\/\//.test(result)) {
    const parsed = new URL(result);
    expect(parsed.password, 'password').toBe('');
    if (transport !== 'file') {
      expect(parsed.hostname).not.toBe('');
      expect(parsed.hostname.replace(/^\[/, '').startsWith('-'), 'host starts with "-"').toBe(false);
      // Only ssh hands the user name to a command line (http(s) gives it to curl as a field).
      if (transport === 'ssh') expect(safeDecode(parsed.username).startsWith('-'), 'ssh user starts with "-"').toBe(false);
    }
  } else if (transport === 'ssh') {
    const { user, host, path } = scpParts(result);
    expect(host, 'scp host').not.toBe('');
    expect(host.startsWith('-'), 'scp host starts with "-"').toBe(false);
    expect(user.startsWith('-'), 'scp user starts with "-"').toBe(false);
    expect(path.startsWith('-'), 'scp path starts with "-"').toBe(false);
    expect(/^[^@/[\]]*:[^@/]*@/.test(result), 'user:password@ form').toBe(false);
  }
}

function safeDecode(value: string): string {
  try {
    return decodeURIComponent(value);
  } catch {
    return value;
  }
}

describe(`validateRemoteUrl (${URL_RUNS} cases per property)`, () => {
  it('accepts only safe URLs of allowed protocols, refuses the rest with an InvalidInputError about the URL', () => {
    check(
      fc.property(anyUrl, protocolSets, (url, protocols) => {
        const outcome = attempt(() => validateRemoteUrl(url, protocols), /url/i);
        if (outcome.ok) expectSafeUrl(outcome.value, protocols);
      }),
      URL_RUNS,
    );
  });

  it('is idempotent: what it returns is accepted again, unchanged', () => {
    check(
      fc.property(anyUrl, protocolSets, (url, protocols) => {
        const outcome = attempt(() => validateRemoteUrl(url, protocols), /url/i);
        if (outcome.ok) expect(validateRemoteUrl(outcome.value, protocols)).toBe(outcome.value);
      }),
      URL_RUNS,
    );
  });

  it('refuses every URL that carries a password, whatever its shape, and never echoes the password', () => {
    const password = fc.stringMatching(/^[A-Za-z0-9]{6,20}$/).map((text) => `Pw${text}`);
    const host = fc.constantFrom('github.com', 'example.com', '[::1]', '127.0.0.1', 'h');
    const shaped = fc
      .tuple(fc.constantFrom('https://', 'http://', 'ssh://', 'git+ssh://', 'git://', 'scp'), fc.stringMatching(/^[a-z]{1,8}$/), password, host, fc.constantFrom('', '/x.git', '/o/r'))
      .map(([scheme, user, pw, at, path]) => ({
        pw,
        url: scheme === 'scp' ? `${user}:${pw}@${at}:${path.replace(/^\//, '')}` : `${scheme}${user}:${pw}@${at}${path}`,
      }));
    check(
      fc.property(shaped, protocolSets, ({ url, pw }, protocols) => {
        const outcome = attempt(() => validateRemoteUrl(url, protocols), /url/i);
        expect(outcome.ok, `accepted ${url}`).toBe(false);
        if (!outcome.ok) expect(outcome.error.message).not.toContain(pw);
      }),
      URL_RUNS,
    );
  });

  it('refuses URLs that start with "-", use remote-helper syntax or have a control character, with every protocol allowed', () => {
    const dangerous = fc.oneof(
      fc.tuple(fc.constantFrom('-', '--', '-o', '--upload-pack='), anyUrl).map(([a, b]) => a + b),
      fc.tuple(fc.stringMatching(/^[A-Za-z0-9+.-]{0,10}$/), anyUrl).map(([transport, rest]) => `${transport}::${rest}`),
      fc.tuple(anyUrl, fc.integer({ min: 0, max: 0x20 }), anyUrl).map(([a, code, b]) => a + String.fromCharCode(code) + b),
    );
    check(
      fc.property(dangerous, (url) => {
        expect(attempt(() => validateRemoteUrl(url, KNOWN_PROTOCOLS), /url/i).ok).toBe(false);
      }),
      URL_RUNS,
    );
  });
});

describe(`parseProtocols (${PROTOCOL_RUNS} cases per property)`, () => {
  const list = fc.oneof(
    hostileString(),
    fc.array(fc.oneof(fc.constantFrom(...KNOWN_PROTOCOLS, 'HTTPS', ' ssh ', '', 'ext', 'fd', 'ftp', 'file:', 'git+ssh'), hostileString({ maxLength: 3 })), { maxLength: 6 }).map((members) => members.join(',')),
  );

  it('returns a non-empty subset of the known protocols, or refuses with an InvalidInputError about the protocol list', () => {
    check(
      fc.property(fc.option(list, { nil: undefined }), (text) => {
        const outcome = attempt(() => parseProtocols(text), /protocol/i);
        if (!outcome.ok) return;
        expect(outcome.value.size).toBeGreaterThan(0);
        for (const member of outcome.value) expect(KNOWN_PROTOCOLS.has(member)).toBe(true);
        // Every member listed made it in (lower-cased, trimmed), and nothing else.
        if (text !== undefined && text.trim() !== '') {
          const listed = new Set(text.split(',').map((m) => m.trim().toLowerCase()).filter((m) => m !== ''));
          expect([...outcome.value].sort()).toEqual([...listed].sort());
        }
      }),
      PROTOCOL_RUNS,
    );
  });
});
