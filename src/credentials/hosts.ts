import { InvalidInputError } from '../errors.js';

/**
 * A host a credential may be sent to. `github.com` (no scheme, no port): https
 * on 443 only (and ssh on 22, which carries no token but may name the
 * credential); `host:8443`: any scheme on that port; `https://host[:port]` or
 * `http://host[:port]`: that scheme only, on the port named or the scheme's default.
 */
export interface HostBinding {
  hostname: string;
  /** The port named, or null. */
  port: number | null;
  /** The scheme named (`http://host`), or null. */
  scheme: 'https' | 'http' | null;
}

const DEFAULT_PORTS: Record<string, number> = { 'https:': 443, 'http:': 80, 'ssh:': 22, 'git:': 9418 };
/** What a binding with neither scheme nor port allows: TLS on its own port, and ssh (encrypted) on its own. */
const BARE_HOST: ReadonlyArray<{ protocol: string; port: number }> = [
  { protocol: 'https:', port: 443 },
  { protocol: 'ssh:', port: 22 },
];
const SCHEME_PREFIX = /^(https?):\/\//i;

/** The forms a host binding takes, for messages. */
export const BINDING_FORMS = 'host, host:port or http(s)://host[:port]';

/**
 * Parses `github.com`, `ghe.example.com:8443` (IPv6 in brackets),
 * `https://ghe.example.com` or `http://10.0.0.5:3000` (a trailing `/` is
 * allowed, nothing else after the host) the way a URL's host is parsed, so
 * that the binding compares with what a connection would use: lower case,
 * IDN in punycode, IPv4 in dotted form.
 * @throws InvalidInputError naming the entry.
 */
export function parseHostBinding(entry: string): HostBinding {
  const text = typeof entry === 'string' ? entry.trim() : '';
  const scheme = SCHEME_PREFIX.exec(text)?.[1]?.toLowerCase() as 'https' | 'http' | undefined;
  const host = scheme === undefined ? text : text.slice(scheme.length + 3).replace(/\/$/, '');
  let url: URL | undefined;
  try {
    url = /^[^/?#@\s]+$/.test(host) ? new URL(`https://${host}`) : undefined;
  } catch {
    url = undefined;
  }
  if (!url || url.username || url.password || url.pathname !== '/' || url.hostname === '') {
    throw new InvalidInputError(`credential host ${JSON.stringify(String(entry).slice(0, 80))} is not ${BINDING_FORMS}`);
  }
  // new URL('https://h:443') drops the default port: "h:443" means 443 itself, not "any default".
  const explicitPort = /:(\d+)$/.exec(host)?.[1];
  return { hostname: url.hostname, port: explicitPort !== undefined ? Number(explicitPort) : null, scheme: scheme ?? null };
}

/**
 * Whether `url` points at one of `hosts` (see {@link HostBinding}): same host
 * name, and a scheme and port the binding names. A binding that names
 * neither allows only TLS (https on 443) and ssh on 22, so that a credential
 * bound to `github.com` never goes over plain HTTP, whatever a link or a
 * redirect says; plain http (or git://) needs a binding that names its scheme
 * or port. Which plaintext protocols are enabled at all is the caller's
 * other check (CredentialStore: FORGESYNC_GIT_PROTOCOLS).
 */
export function boundTo(hosts: readonly HostBinding[], url: URL): boolean {
  const port = url.port !== '' ? Number(url.port) : DEFAULT_PORTS[url.protocol];
  // Only http(s) URLs have their host lower-cased by the parser; ssh's (`git@GitHub.com:o/r`) keep what was written.
  const hostname = url.hostname.toLowerCase();
  return hosts.some((binding) => binding.hostname === hostname && bindingAllows(binding, url.protocol, port));
}

function bindingAllows(binding: HostBinding, protocol: string, port: number | undefined): boolean {
  if (binding.scheme !== null) return protocol === `${binding.scheme}:` && port === (binding.port ?? DEFAULT_PORTS[protocol]);
  if (binding.port !== null) return port === binding.port;
  return BARE_HOST.some((allowed) => allowed.protocol === protocol && allowed.port === port);
}

/** `host[:port]` of a URL, for messages. */
export function hostOf(url: string): string {
  try {
    return new URL(url).host || 'this URL';
  } catch {
    return /^(?:[^@/]*@)?([^:/]+)/.exec(url)?.[1] ?? 'this URL';
  }
}
