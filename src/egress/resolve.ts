import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import type { LookupFunction } from 'node:net';
import type { ResolvedAddress, ResolvedHost } from './address.js';

/** Resolves a name to every address it has (never an address literal: those are not looked up). */
export type Lookup = (host: string) => Promise<ResolvedAddress[]>;

/**
 * The system resolver (getaddrinfo, as git, curl and ssh use it: /etc/hosts
 * included), every address, in the resolver's order. Nothing is cached here:
 * a cache would outlive TTLs it cannot see; callers resolve once per use
 * (one sync) and pin their connections to what they checked.
 */
export const systemLookup: Lookup = (host) =>
  new Promise((resolve, reject) => {
    dnsLookup(host, { all: true, verbatim: true }, (error, addresses: LookupAddress[]) => {
      if (error) reject(error);
      else resolve(addresses.map(({ address, family }) => ({ address, family: family === 6 ? 6 : 4 })));
    });
  });

/**
 * A `lookup` for `net`/`http(s)` requests that answers only with the checked
 * addresses of `target`, so the connection goes where the check looked (no
 * second resolution, no DNS rebinding between check and connect). Any other
 * name is an error: the request was made for `target` only.
 */
export function pinnedLookup(target: ResolvedHost): LookupFunction {
  return (hostname, options, callback) => {
    const wanted = options.family === 4 || options.family === 'IPv4' ? 4 : options.family === 6 || options.family === 'IPv6' ? 6 : 0;
    const addresses = target.addresses.filter((entry) => wanted === 0 || entry.family === wanted);
    if (hostname.toLowerCase() !== target.host || addresses.length === 0) {
      const error = Object.assign(new Error(`no checked address of ${hostname}`), { code: 'ENOTFOUND', hostname });
      callback(error, '', 0);
      return;
    }
    if (options.all) callback(null, addresses.map(({ address, family }) => ({ address, family })));
    else callback(null, addresses[0]!.address, addresses[0]!.family);
  };
}
