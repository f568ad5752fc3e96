import { isIP } from 'node:net';
import { stripBrackets } from './address.js';

/** A network the operator allows: `10.20.0.0/16`, `fd00:1::/64`, or one address (`/32`, `/128`). */
export interface AllowedNetwork {
  readonly cidr: string;
  readonly family: 4 | 6;
}

/**
 * Parses the allowNetworks setting: a comma list (or, in the config file, an
 * array) of CIDRs or single addresses, e.g. `127.0.0.0/8,::1/128,10.1.2.3`.
 * @returns the canonical CIDRs (`10.1.2.3` → `10.1.2.3/32`).
 * @throws Error naming the first entry that is neither.
 */
export function parseNetworks(value: unknown): string[] {
  const entries = (Array.isArray(value) ? value.map(String) : String(value ?? '').split(','))
    .map((entry) => entry.trim())
    .filter((entry) => entry !== '');
  if (entries.length === 0) throw new Error('must list at least one CIDR or address, e.g. 10.0.0.0/8,fd00::/8');
  return entries.map((entry) => parseNetwork(entry).cidr);
}

/** One CIDR or address. @throws Error saying what is wrong with it. */
export function parseNetwork(entry: string): AllowedNetwork {
  const match = /^([^/]+)(?:\/(\d{1,3}))?$/.exec(entry.trim());
  const address = stripBrackets(match?.[1] ?? '').toLowerCase();
  const family = isIP(address);
  if (!match || (family !== 4 && family !== 6)) {
    throw new Error(`${JSON.stringify(entry)} is not a CIDR (10.0.0.0/8, fd00::/8) or an address`);
  }
  const max = family === 4 ? 32 : 128;
  const prefix = match[2] === undefined ? max : Number(match[2]);
  if (prefix > max) throw new Error(`${JSON.stringify(entry)}: an IPv${family} prefix is at most /${max}`);
  return { cidr: `${address}/${prefix}`, family };
}
