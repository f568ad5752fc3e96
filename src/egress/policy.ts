import type { BlockList } from 'node:net';
import { addressLiteral, embeddedIPv4, stripBrackets, type ResolvedAddress, type ResolvedHost } from './address.js';
import { EgressLookupError, EgressRefusedError } from './errors.js';
import { parseNetwork } from './networks.js';
import { blockListOf, REFUSED, refusedRangeOf } from './ranges.js';
import { systemLookup, type Lookup } from './resolve.js';

export interface EgressPolicyOptions {
  /** CIDRs (or addresses) the operator allows although they are refused by default; see parseNetworks. */
  allowNetworks?: readonly string[];
  /** How names are resolved (default: the system resolver); tests inject names here. */
  lookup?: Lookup;
}

/** Why an address is refused. */
export interface Refusal {
  readonly range: string;
  readonly reason: string;
  readonly carried?: { address: string; form: string };
}

/**
 * What forgesync may connect to. Every outbound connection passes it: git over
 * http(s), ssh and git://, the in-process ref reader, and any later API call,
 * download or feed sink. By default it refuses this machine, the local networks,
 * link-local (cloud metadata), carrier-grade NAT and ranges no public host lives
 * in (ranges.ts); `allowNetworks` opens chosen CIDRs. A name is resolved once
 * per use, refused if ANY of its addresses is refused, and the caller connects
 * only to the addresses checked (pinning), never resolving again.
 */
export class EgressPolicy {
  readonly allowNetworks: readonly string[];
  readonly #allowed: Record<4 | 6, BlockList>;
  readonly #lookup: Lookup;

  constructor(options: EgressPolicyOptions = {}) {
    const networks = (options.allowNetworks ?? []).map((entry) => parseNetwork(entry));
    this.allowNetworks = networks.map((network) => network.cidr);
    // One list per family (see REFUSED in ranges.ts for why).
    this.#allowed = {
      4: blockListOf(networks.filter((network) => network.family === 4)),
      6: blockListOf(networks.filter((network) => network.family === 6)),
    };
    this.#lookup = options.lookup ?? systemLookup;
  }

  /** Why `address` is refused, or undefined when forgesync may connect to it. */
  refusal(address: ResolvedAddress): Refusal | undefined {
    const carried = address.family === 6 ? embeddedIPv4(address.address) : undefined;
    if (carried) {
      // Checked as the IPv4 address it reaches; allowed by either spelling.
      if (this.#allowed[4].check(carried.address, 'ipv4') || this.#allowed[6].check(address.address, 'ipv6')) return undefined;
      if (!REFUSED[4].check(carried.address, 'ipv4')) return undefined;
      const range = refusedRangeOf(carried.address, 4)!;
      return { range: range.cidr, reason: range.label, carried };
    }
    const type = address.family === 6 ? 'ipv6' : 'ipv4';
    if (this.#allowed[address.family].check(address.address, type) || !REFUSED[address.family].check(address.address, type)) return undefined;
    const range = refusedRangeOf(address.address, address.family)!;
    return { range: range.cidr, reason: range.label };
  }

  /** @throws EgressRefusedError when `address` (one of `host`'s) is refused. */
  check(host: string, address: ResolvedAddress): void {
    const refusal = this.refusal(address);
    if (refusal) throw new EgressRefusedError(host, address.address, refusal.range, refusal.reason, refusal.carried);
  }

  /**
   * The address `host` is written as, checked; undefined when it is a name
   * (which is checked when it is resolved, at connection time). What
   * `addSource` uses to refuse a URL up front, without a DNS lookup.
   * @throws EgressRefusedError
   */
  checkLiteral(host: string): ResolvedAddress | undefined {
    const literal = addressLiteral(host);
    if (literal) this.check(stripBrackets(host).toLowerCase(), literal);
    return literal;
  }

  /**
   * Every address of `host`, each checked: an address literal as it is (no
   * lookup), a name through the resolver, once. Connect only to these.
   * @throws EgressRefusedError when any address is refused; EgressLookupError when
   *   the name does not resolve (or not within `timeoutMs`); `signal.reason` on abort.
   */
  async resolve(host: string, options: { signal?: AbortSignal; timeoutMs?: number } = {}): Promise<ResolvedHost> {
    const name = stripBrackets(host).toLowerCase();
    const literal = this.checkLiteral(name);
    if (literal) return { host: name, addresses: [literal] };
    const found = await withLimits(this.#lookup(name), name, options);
    const addresses = unique(found.map((entry) => addressLiteral(entry.address)).filter((entry): entry is ResolvedAddress => entry !== undefined));
    if (addresses.length === 0) throw new EgressLookupError(name, 'ENODATA');
    for (const address of addresses) this.check(name, address);
    return { host: name, addresses };
  }
}

function unique(addresses: ResolvedAddress[]): ResolvedAddress[] {
  const seen = new Set<string>();
  return addresses.filter((entry) => !seen.has(entry.address) && Boolean(seen.add(entry.address)));
}

/** The lookup, failing with EgressLookupError on its error or after `timeoutMs`, and with the signal's reason on abort. */
function withLimits(lookup: Promise<ResolvedAddress[]>, host: string, options: { signal?: AbortSignal; timeoutMs?: number }): Promise<ResolvedAddress[]> {
  const { signal, timeoutMs } = options;
  return new Promise((resolve, reject) => {
    if (signal?.aborted) {
      reject(signal.reason);
      return;
    }
    const finish = (done: () => void): void => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
      done();
    };
    const onAbort = (): void => finish(() => reject(signal?.reason));
    const timer = timeoutMs === undefined ? undefined : setTimeout(() => finish(() => reject(new EgressLookupError(host, 'ETIMEOUT'))), Math.min(timeoutMs, 2 ** 31 - 1));
    signal?.addEventListener('abort', onAbort, { once: true });
    lookup.then(
      (addresses) => finish(() => resolve(addresses)),
      (error: NodeJS.ErrnoException) => finish(() => reject(new EgressLookupError(host, error?.code ?? 'error'))),
    );
  });
}
