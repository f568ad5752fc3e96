import { BlockList } from 'node:net';

/** An address range forgesync does not connect to unless the operator allows it. */
export interface RefusedRange {
  /** `169.254.0.0/16`: what the error message shows and what allowNetworks would take. */
  readonly cidr: string;
  readonly family: 4 | 6;
  /** Why it is refused, for the error message. */
  readonly label: string;
}

// Everything a server-side request forgery would aim at: this machine, the local
// networks, the cloud metadata services, and ranges that are never a public git
// host (documentation, benchmarking, multicast, reserved). Listed most specific
// first, so the error names the narrowest range. IPv4-mapped, IPv4-translated,
// NAT64 and 6to4 IPv6 addresses are not listed: they are checked as the IPv4
// address they carry (see address.ts).
const V4: ReadonlyArray<[string, string]> = [
  ['0.0.0.0/8', '"this network": 0.0.0.0 reaches this machine'],
  ['10.0.0.0/8', 'private network (RFC 1918)'],
  ['100.64.0.0/10', 'carrier-grade NAT (RFC 6598); some clouds serve metadata here'],
  ['127.0.0.0/8', 'loopback: this machine'],
  ['169.254.0.0/16', 'link-local: cloud metadata services answer here'],
  ['172.16.0.0/12', 'private network (RFC 1918)'],
  ['192.0.0.0/24', 'IETF protocol assignments'],
  ['192.0.2.0/24', 'documentation (TEST-NET-1)'],
  ['192.88.99.0/24', '6to4 relay anycast (deprecated)'],
  ['192.168.0.0/16', 'private network (RFC 1918)'],
  ['198.18.0.0/15', 'benchmarking'],
  ['198.51.100.0/24', 'documentation (TEST-NET-2)'],
  ['203.0.113.0/24', 'documentation (TEST-NET-3)'],
  ['224.0.0.0/4', 'multicast'],
  ['255.255.255.255/32', 'broadcast'],
  ['240.0.0.0/4', 'reserved'],
];

const V6: ReadonlyArray<[string, string]> = [
  ['::/128', 'unspecified: reaches this machine'],
  ['::1/128', 'loopback: this machine'],
  ['::/8', 'reserved (IPv4-compatible and other reserved forms)'],
  ['64:ff9b:1::/48', 'local-use IPv4/IPv6 translation'],
  ['100::/64', 'discard-only'],
  ['2001::/32', 'Teredo tunnelling (carries a hidden IPv4 address)'],
  ['2001::/23', 'IETF protocol assignments'],
  ['2001:db8::/32', 'documentation'],
  ['3fff::/20', 'documentation'],
  ['5f00::/16', 'segment routing (SRv6) identifiers'],
  ['fc00::/7', 'unique-local network (private)'],
  ['fe80::/10', 'link-local'],
  ['fec0::/10', 'site-local (deprecated, private)'],
  ['ff00::/8', 'multicast'],
];

function ranges(list: ReadonlyArray<[string, string]>, family: 4 | 6): RefusedRange[] {
  return list.map(([cidr, label]) => ({ cidr, family, label }));
}

/** The ranges refused by default, IPv4 then IPv6. */
export const REFUSED_RANGES: readonly RefusedRange[] = [...ranges(V4, 4), ...ranges(V6, 6)];

/**
 * The refused ranges of each family in one BlockList: the fast test (an allowed
 * address costs one look in it). One list per family, never both in one: a
 * BlockList checks an IPv4 address against IPv6 rules as its mapped form
 * (`::ffff:a.b.c.d`), which `::/8` would hold, so every IPv4 address would match.
 */
export const REFUSED: Readonly<Record<4 | 6, BlockList>> = {
  4: blockListOf(REFUSED_RANGES.filter((range) => range.family === 4)),
  6: blockListOf(REFUSED_RANGES.filter((range) => range.family === 6)),
};

/** The first range of REFUSED_RANGES holding `address` (asked only once REFUSED said yes, to name it). */
export function refusedRangeOf(address: string, family: 4 | 6): RefusedRange | undefined {
  const type = family === 6 ? 'ipv6' : 'ipv4';
  return REFUSED_RANGES.find((range) => range.family === family && blockListOf([range]).check(address, type));
}

/** A BlockList holding the given CIDRs; callers keep one family per list (see REFUSED). */
export function blockListOf(list: ReadonlyArray<{ cidr: string; family: 4 | 6 }>): BlockList {
  const blocks = new BlockList();
  for (const { cidr, family } of list) {
    const [network, prefix] = cidr.split('/');
    blocks.addSubnet(network!, Number(prefix), family === 6 ? 'ipv6' : 'ipv4');
  }
  return blocks;
}
