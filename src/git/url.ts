import { isAbsolute, resolve } from 'node:path';
import { InvalidGitProtocolError, InvalidRemoteUrlError } from './errors.js';

/** Every protocol forgesync can be configured to allow. */
export const KNOWN_PROTOCOLS: ReadonlySet<string> = new Set(['https', 'ssh', 'http', 'git', 'file']);
/** Protocols allowed when FORGESYNC_GIT_PROTOCOLS is not set. */
export const DEFAULT_PROTOCOLS: ReadonlySet<string> = new Set(['https', 'ssh']);
/** Longest remote URL accepted. */
export const MAX_URL_LENGTH = 2048;

// eslint-disable-next-line no-control-regex
/** Whitespace, controls, and the invisible or direction-changing characters that make a URL read as another. */
const BAD_CHARS = /[\u0000-\u0020\u007f-\u00a0\u00ad\u061c\u1680\u180e\u2000-\u200f\u2028-\u202f\u205f-\u2064\u2066-\u206f\u3000\ufeff]/;
/** git's test for `<transport>::<address>` (transport.c: alnum, '+', '-', '.' then "::"). */
const REMOTE_HELPER = /^[A-Za-z0-9+.-]*::/;
const SCHEME = /^([A-Za-z][A-Za-z0-9+.-]*):\/\//;
/** Prefixes of well-known access tokens, refused even as a bare URL username. */
const TOKEN_PREFIXES = /^(gh[pousr]_|github_pat_|glpat-|glptt-|gldt-|xox[bpa]-|ATBB|ya29\.)/;
const CREDENTIAL_HINT = 'put the secret in a credential reference (the source\'s token) instead of the URL';
/**
 * An ssh or git:// host as ssh and git-daemon connections take it: a DNS-style
 * name, an IPv4 address, or (bracketed in the URL) an IPv6 address; for
 * scp-like `[host:port]:path`, with a port. Anything else (shell or option
 * characters, a `%`, an `@`) has no business there.
 */
const HOST_NAME = /^[a-z0-9_](?:[a-z0-9_.-]*[a-z0-9_])?\.?$/i;
const IPV6 = /^[0-9a-f:.]+$/i;
const DEFAULT_PORTS: Record<string, number> = { https: 443, http: 80, ssh: 22, git: 9418 };

/**
 * Parses a comma list such as FORGESYNC_GIT_PROTOCOLS (`https,ssh` when unset or empty).
 * @throws InvalidGitProtocolError naming the first unknown member.
 */
export function parseProtocols(list: string | undefined): ReadonlySet<string> {
  if (list === undefined || list.trim() === '') return DEFAULT_PROTOCOLS;
  const result = new Set<string>();
  for (const raw of list.split(',')) {
    const member = raw.trim().toLowerCase();
    if (member === '') continue;
    if (!KNOWN_PROTOCOLS.has(member)) {
      throw new InvalidGitProtocolError(
        `unknown git protocol ${JSON.stringify(raw.trim())} in ${JSON.stringify(list)}; ` +
          `allowed members are ${[...KNOWN_PROTOCOLS].join(', ')}`,
      );
    }
    result.add(member);
  }
  if (result.size === 0) throw new InvalidGitProtocolError(`no git protocol listed in ${JSON.stringify(list)}`);
  return result;
}

/** Where a URL points, as far as policy is concerned. */
type Kind = 'https' | 'http' | 'ssh' | 'git' | 'file';

interface Parsed {
  kind: Kind;
  /** Lower-cased host (decoded where git decodes it, no brackets), `local` for file URLs and paths. */
  host: string;
  /** The port named in the URL, if any. */
  port?: number;
  normalised: string;
}

/**
 * Checks a remote URL against forgesync's safety rules and the protocol allowlist.
 * Returns the normalised URL: WHATWG form for http(s)/git/file URLs, the input for
 * ssh, an absolute path for local paths.
 * @throws InvalidRemoteUrlError explaining what is wrong.
 */
export function validateRemoteUrl(url: string, protocols: ReadonlySet<string>): string {
  const parsed = parse(url);
  // Normalising may lengthen it (percent-encoding, the working directory of a relative path);
  // what is returned must pass again, since mirrors validate the stored URL at every sync.
  if (parsed.normalised.length > MAX_URL_LENGTH) {
    throw new InvalidRemoteUrlError(url, `normalised, it is ${parsed.normalised.length} characters long; the limit is ${MAX_URL_LENGTH}`);
  }
  if (!protocols.has(parsed.kind)) {
    const what = parsed.kind === 'file' ? 'local repositories (file:// and paths)' : `${parsed.kind} URLs`;
    throw new InvalidRemoteUrlError(
      url,
      `${what} are not allowed; allowed protocols: ${[...protocols].join(', ')} (set FORGESYNC_GIT_PROTOCOLS to change)`,
    );
  }
  return parsed.normalised;
}

/** The host a URL points at (per-host fairness): `github.com`, or `local` for file URLs and paths. */
export function urlHost(url: string): string {
  try {
    return parse(url).host;
  } catch {
    return 'unknown';
  }
}

/** Git's name for the protocol of a URL (`https`, `ssh`, `file`…), after validation of its shape. */
export function urlProtocol(url: string): string {
  return parse(url).kind;
}

/** Where a remote URL connects: host (decoded, lower case, no brackets) and port; undefined for local repositories. */
export interface RemoteTarget {
  protocol: 'https' | 'http' | 'ssh' | 'git';
  host: string;
  port: number;
}

/**
 * The host and port a (valid) remote URL makes git connect to, as git reads
 * them: ssh:// and git:// URLs percent-decoded, scp-like `[host:port]:path`
 * split. Undefined for local paths and file:// URLs, which connect nowhere.
 * @throws InvalidRemoteUrlError as validateRemoteUrl does.
 */
export function remoteTarget(url: string): RemoteTarget | undefined {
  const parsed = parse(url);
  if (parsed.kind === 'file') return undefined;
  return { protocol: parsed.kind, host: parsed.host, port: parsed.port ?? DEFAULT_PORTS[parsed.kind]! };
}

function parse(url: string): Parsed {
  const fail = (reason: string): never => {
    throw new InvalidRemoteUrlError(String(url), reason);
  };
  if (typeof url !== 'string' || url.length === 0) fail('it is empty');
  if (url.length > MAX_URL_LENGTH) fail(`it is ${url.length} characters long; the limit is ${MAX_URL_LENGTH}`);
  if (BAD_CHARS.test(url)) fail('it contains whitespace or control characters');
  if (url.startsWith('-')) fail('it starts with "-" and would be read as a git option');
  if (REMOTE_HELPER.test(url)) fail('remote-helper syntax "<transport>::<address>" (ext::, fd::…) is not allowed');

  const scheme = SCHEME.exec(url)?.[1]?.toLowerCase();
  if (scheme !== undefined) return parseWithScheme(url, scheme, fail);

  const scp = scpLike(url);
  if (scp) {
    // Not a URL: git takes it as written (no percent-decoding).
    const { host, port } = splitScpHost(scp.host);
    checkSshParts(scp.user, host, scp.path, fail);
    return { kind: 'ssh', host: host.toLowerCase(), ...(port !== undefined ? { port } : {}), normalised: url };
  }
  const absolute = isAbsolute(url) ? resolve(url) : resolve(process.cwd(), url);
  return { kind: 'file', host: 'local', normalised: absolute };
}

function parseWithScheme(url: string, scheme: string, fail: (reason: string) => never): Parsed {
  const kind: Kind | undefined =
    scheme === 'https' || scheme === 'http' || scheme === 'git' || scheme === 'file' || scheme === 'ssh'
      ? scheme
      : scheme === 'git+ssh' || scheme === 'ssh+git'
        ? 'ssh'
        : undefined;
  if (kind === undefined) return fail(`scheme "${scheme}://" is not supported; use https://, ssh:// or user@host:path`);
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return fail('it is not a well-formed URL');
  }
  const user = safeDecode(parsed.username);
  if (parsed.password !== '') fail(`it contains a password; ${CREDENTIAL_HINT}`);
  if (TOKEN_PREFIXES.test(user)) fail(`its user name looks like an access token; ${CREDENTIAL_HINT}`);

  if (kind === 'file') {
    if (parsed.host !== '' && parsed.host !== 'localhost') fail('file:// URLs must not name a host');
    if (user !== '') fail('file:// URLs must not contain a user name');
    return { kind, host: 'local', normalised: parsed.href };
  }
  if (parsed.hostname === '') fail('it has no host');
  const port = parsed.port === '' ? {} : { port: Number(parsed.port) };
  if (kind === 'ssh' || kind === 'git') {
    // The URL parser leaves the host of these schemes percent-encoded, but git decodes the
    // whole URL before it splits it (connect.c): check what git will use, so that `%2D`
    // cannot hide a leading "-", nor `%40`/`%3A` another user or port.
    const host = decodeHost(stripBrackets(parsed.hostname), fail);
    if (kind === 'ssh') checkSshParts(user, host, safeDecode(parsed.pathname), fail);
    else checkHost(host, fail);
    if (kind === 'git' && user !== '') fail('git:// URLs cannot carry a user name');
    return { kind, host: host.toLowerCase(), ...port, normalised: kind === 'ssh' ? url : parsed.href };
  }
  // http(s): the URL parser already decoded and checked the host (IDN, IPv4 forms, forbidden characters).
  const host = stripBrackets(parsed.hostname).toLowerCase();
  if (host.startsWith('-')) fail('its host starts with "-"');
  return { kind, host, ...port, normalised: parsed.href };
}

function checkSshParts(user: string, host: string, path: string, fail: (reason: string) => never): void {
  if (host === '') fail('it has no host');
  if (user.startsWith('-')) fail('its user name starts with "-" and would be read as an ssh option');
  if (path.startsWith('-')) fail('its path starts with "-"');
  if (user.includes(':')) fail(`it contains a password; ${CREDENTIAL_HINT}`);
  if (/[@/\\]/.test(user)) fail('its user name contains "@", "/" or "\\"');
  checkHost(host, fail);
}

/** An ssh or git:// host (decoded, no brackets): a name, an IPv4 or an IPv6 address; never an option. */
function checkHost(host: string, fail: (reason: string) => never): void {
  if (host === '') fail('it has no host');
  if (host.startsWith('-')) fail('its host starts with "-" and would be read as an ssh option');
  if (!HOST_NAME.test(host) && !(IPV6.test(host) && host.includes(':'))) {
    fail('its host is not a host name or an IP address (letters, digits, ".", "-", "_"; IPv6 in brackets)');
  }
}

/** Percent-decodes a host the way git will; a malformed escape is refused rather than guessed at. */
function decodeHost(host: string, fail: (reason: string) => never): string {
  try {
    return decodeURIComponent(host);
  } catch {
    return fail('its host has a malformed percent-escape');
  }
}

/** scp-like `[host:port]` (git's bracketed form with a port) → host and port; `[::1]` and names as they are. */
function splitScpHost(raw: string): { host: string; port?: number } {
  const inner = stripBrackets(raw);
  if (raw.startsWith('[')) {
    const withPort = /^(.*[^:]):(\d{1,5})$/.exec(inner);
    if (withPort && !withPort[1]!.includes(':')) return { host: withPort[1]!, port: Number(withPort[2]) };
  }
  return { host: inner };
}

/** git's scp-like syntax `[user@]host:path`: a ':' before any '/'. */
function scpLike(url: string): { user: string; host: string; path: string } | undefined {
  const slash = url.indexOf('/');
  const bracketed = /^(?:([^@/]*)@)?(\[[^\]/]*\]):(.*)$/s.exec(url);
  if (bracketed) return { user: bracketed[1] ?? '', host: bracketed[2] ?? '', path: bracketed[3] ?? '' };
  const colon = url.indexOf(':');
  if (colon <= 0 || (slash !== -1 && slash < colon)) return undefined;
  const before = url.slice(0, colon);
  const at = before.lastIndexOf('@');
  const path = url.slice(colon + 1);
  // `user:password@host:path` has its first ':' before the '@'.
  const laterAt = path.indexOf('@');
  const laterSlash = path.indexOf('/');
  if (at === -1 && laterAt !== -1 && (laterSlash === -1 || laterAt < laterSlash)) {
    return { user: `${before}:`, host: path.slice(laterAt + 1), path: '' };
  }
  return { user: at === -1 ? '' : before.slice(0, at), host: before.slice(at + 1), path };
}

function safeDecode(value: string): string {
  try {
    return decodeURIComponent(value);
  } catch {
    return value;
  }
}

function stripBrackets(host: string): string {
  return host.startsWith('[') && host.endsWith(']') ? host.slice(1, -1) : host;
}
