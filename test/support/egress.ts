import { EgressPolicy } from '../../src/egress/policy.js';
import type { Lookup } from '../../src/egress/resolve.js';

/** What the tests' servers on 127.0.0.1 need: loopback opted in, as an operator would with FORGESYNC_ALLOW_NETWORKS. */
export const LOOPBACK_NETWORKS = '127.0.0.0/8,::1/128';

/** An egress policy allowing loopback (and, with `lookup`, names of the test's own). */
export function loopbackEgress(lookup?: Lookup): EgressPolicy {
  return new EgressPolicy({ allowNetworks: LOOPBACK_NETWORKS.split(','), ...(lookup ? { lookup } : {}) });
}
