import { isIP, isIPv4 } from 'node:net';

/** One address a host resolved to (or is). */
export interface ResolvedAddress {
  readonly address: string;
  readonly family: 4 | 6;
}

/** A host and every address it resolved to, all of them checked. */
export interface ResolvedHost {
  /** The name (or address literal) as connections name it: lower case, no brackets. */
  readonly host: string;
  readonly addresses: readonly ResolvedAddress[];
}

/** `[::1]` → `::1`; anything else unchanged. */
export function stripBrackets(host: string): string {
  return host.startsWith('[') && host.endsWith(']') ? host.slice(1, -1) : host;
}

/**
 * The address `host` is written as, or undefined for a name. IPv4 is read in
 * every form the URL standard and `inet_aton` (which getaddrinfo, and so ssh
 * and git, use) accept — `0x7f000001`, `017700000001`, `2130706433`, `127.1` —
 * so that no spelling of an address passes for a name. IPv6 may be bracketed;
 * a zone (`%eth0`) is dropped.
 */
export function addressLiteral(host: string): ResolvedAddress | undefined {
  const bare = stripBrackets(host.trim()).toLowerCase();
  const unzoned = bare.includes(':') ? bare.replace(/%.*$/, '') : bare;
  const family = isIP(unzoned);
  if (family === 4 || family === 6) return { address: family === 6 ? canonicalIPv6(unzoned) : unzoned, family };
  // Only digits, hex and dots can spell an IPv4 address; the URL parser canonicalises those.
  if (!/^[0-9a-fx.]+$/.test(bare)) return undefined;
  try {
    const hostname = new URL(`http://${bare}/`).hostname;
    return isIPv4(hostname) ? { address: hostname, family: 4 } : undefined;
  } catch {
    return undefined;
  }
}

/** An IPv4 address an IPv6 address carries, and which form carries it. */
export interface EmbeddedIPv4 {
  readonly address: string;
  readonly form: string;
}

/**
 * The IPv4 address carried by an IPv6 address of a form that reaches it:
 * IPv4-mapped `::ffff:a.b.c.d` (a dual-stack socket connects to the IPv4
 * address), IPv4-translated `::ffff:0:a.b.c.d`, NAT64 `64:ff9b::a.b.c.d` and
 * 6to4 `2002:aabb:ccdd::`. Undefined for any other address.
 */
export function embeddedIPv4(address: string): EmbeddedIPv4 | undefined {
  const bytes = ipv6Bytes(address);
  const zero = (from: number, to: number) => bytes.slice(from, to).every((byte) => byte === 0);
  const v4 = (at: number) => bytes.slice(at, at + 4).join('.');
  if (zero(0, 10) && bytes[10] === 0xff && bytes[11] === 0xff) return { address: v4(12), form: 'IPv4-mapped' };
  if (zero(0, 8) && bytes[8] === 0xff && bytes[9] === 0xff && zero(10, 12)) return { address: v4(12), form: 'IPv4-translated' };
  if (bytes[0] === 0x00 && bytes[1] === 0x64 && bytes[2] === 0xff && bytes[3] === 0x9b && zero(4, 12)) return { address: v4(12), form: 'NAT64' };
  if (bytes[0] === 0x20 && bytes[1] === 0x02) return { address: v4(2), form: '6to4' };
  return undefined;
}

/** The 16 bytes of a valid IPv6 address (`isIPv6` true), `::` and a dotted IPv4 tail included. */
function ipv6Bytes(address: string): number[] {
  let text = address.replace(/%.*$/, '');
  const tail: number[] = [];
  const lastColon = text.lastIndexOf(':');
  if (text.slice(lastColon + 1).includes('.')) {
    tail.push(...text.slice(lastColon + 1).split('.').map(Number));
    text = `${text.slice(0, lastColon + 1)}0:0`;
  }
  const [left = '', right] = text.split('::');
  const head = left === '' ? [] : left.split(':');
  const rest = right === undefined ? [] : right === '' ? [] : right.split(':');
  const groups = right === undefined ? head : [...head, ...new Array<string>(8 - head.length - rest.length).fill('0'), ...rest];
  const bytes = groups.flatMap((group) => {
    const value = Number.parseInt(group, 16);
    return [value >> 8, value & 0xff];
  });
  if (tail.length === 4) bytes.splice(12, 4, ...tail);
  return bytes;
}

/** The compressed, lower-case form of an IPv6 address (as the URL parser writes it). */
function canonicalIPv6(address: string): string {
  try {
    return stripBrackets(new URL(`http://[${address}]/`).hostname);
  } catch {
    return address;
  }
}
