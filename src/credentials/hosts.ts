import { InvalidInputError } from '../errors.js';

/** A host a credential may be sent to, with a port or (null) the default port of the URL's scheme. */
export interface HostBinding {
  hostname: string;
  port: number | null;
}

const DEFAULT_PORTS: Record<string, number> = { 'https:': 443, 'http:': 80, 'ssh:': 22 };

/**
 * Parses `github.com` or `ghe.example.com:8443` (IPv6 in brackets) the way a
 * URL's host is parsed, so that the binding compares with what a connection
 * would use: lower case, IDN in punycode, IPv4 in dotted form.
 * @throws InvalidInputError naming the entry.
 */
export function parseHostBinding(entry: string): HostBinding {
  const text = typeof entry === 'string' ? entry.trim() : '';
  let url: URL | undefined;
  try {
    url = /^[^/?#@\s]+$/.test(text) ? new URL(`https://${text}`) : undefined;
  } catch {
    url = undefined;
  }
  if (!url || url.username || url.password || url.pathname !== '/' || url.hostname === '') {
    throw new InvalidInputError(`credential host ${JSON.stringify(String(entry).slice(0, 80))} is not host or host:port`);
  }
  // new URL('https://h:443') drops the default port: "h:443" means 443 itself, not "any default".
  const explicitPort = /:(\d+)$/.exec(text)?.[1];
  return { hostname: url.hostname, port: explicitPort !== undefined ? Number(explicitPort) : null };
}

/** Whether `url` points at one of `hosts`: same host name, and the named port or the scheme's default one. */
export function boundTo(hosts: readonly HostBinding[], url: URL): boolean {
  const port = url.port !== '' ? Number(url.port) : DEFAULT_PORTS[url.protocol];
  return hosts.some((binding) => binding.hostname === url.hostname && (binding.port ?? DEFAULT_PORTS[url.protocol]) === port);
}

/** `host[:port]` of a URL, for messages. */
export function hostOf(url: string): string {
  try {
    return new URL(url).host || 'this URL';
  } catch {
    return /^(?:[^@/]*@)?([^:/]+)/.exec(url)?.[1] ?? 'this URL';
  }
}
