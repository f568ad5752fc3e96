/**
 * The egress policy: what forgesync may connect to, and the pieces every
 * outbound connection is made with (an address check, a resolver, a pinned
 * HTTP(S) request with manual redirects).
 * @packageDocumentation
 */
export { addressLiteral, embeddedIPv4, stripBrackets, type ResolvedAddress, type ResolvedHost, type EmbeddedIPv4 } from './address.js';
export type { BodyMeter, BodySink } from './body.js';
export { CredentialRedirectError, EgressLookupError, EgressNetworkError, EgressRefusedError, EgressResponseTooLargeError, EgressTimeoutError } from './errors.js';
export { PinnedAgent, pinnedRequest, requestFollowingRedirects, type PinnedRequestOptions, type PinnedResponse, type RedirectingRequestOptions } from './http.js';
export { parseNetwork, parseNetworks, type AllowedNetwork } from './networks.js';
export { EgressPolicy, type EgressPolicyOptions, type Refusal } from './policy.js';
export { proxyConfigured } from './proxy.js';
export { REFUSED_RANGES, type RefusedRange } from './ranges.js';
export { pinnedLookup, systemLookup, type Lookup } from './resolve.js';
