import { InvalidInputError, UnavailableError } from '../errors.js';
import type { ResolvedHost } from './address.js';

const ALLOW_HINT = 'allowNetworks (FORGESYNC_ALLOW_NETWORKS)';

/**
 * forgesync refused to connect to an address of a range it does not connect to
 * unless allowed (loopback, private, link-local…). Nothing was sent: the
 * connection was never attempted, so the message is the same whether anything
 * listens there or not, and it names no port.
 */
export class EgressRefusedError extends InvalidInputError {
  constructor(
    /** The host as the URL names it (a name or an address). */
    readonly host: string,
    /** The refused address it is, or resolves to. */
    readonly address: string,
    /** The refused range holding it (`169.254.0.0/16`). */
    readonly range: string,
    /** Why that range is refused. */
    readonly reason: string,
    /** The IPv4 address an IPv6 address carries, when that is what was refused. */
    readonly carried?: { address: string; form: string },
  ) {
    const subject = host === address ? 'it' : `it resolves to ${address}, which`;
    const what = carried ? `${subject} carries the IPv4 address ${carried.address} (${carried.form}), which` : subject;
    const add = carried?.address ?? address;
    super(
      `refusing to connect to ${host}: ${what} is in ${range} (${reason}), a range forgesync does not connect to ` +
        `unless allowed; if this upstream is meant to be reached, add ${add} (or ${range}) to ${ALLOW_HINT}`,
    );
  }
}

/** A host name could not be resolved; forgesync resolves every name itself, to check its addresses. */
export class EgressLookupError extends UnavailableError {
  constructor(readonly host: string, readonly code: string) {
    super(`cannot resolve ${host} (${code}); check the host name and this machine's DNS (forgesync resolves every host it connects to, to check its addresses)`);
  }
}

/**
 * A redirect would have taken a credential to an origin it is not bound to.
 * forgesync neither follows it nor drops the credential silently (a sync
 * without it could mirror something else than the operator meant).
 */
export class CredentialRedirectError extends InvalidInputError {
  constructor(readonly from: string, readonly to: string) {
    super(
      `${from} redirects to ${to}, which the source's credential is not bound to; forgesync sends a credential only ` +
        `to the hosts it is bound to and does not follow this redirect: set the source's URL to the new location, ` +
        `and bind the credential to ${to} if it belongs there`,
    );
  }
}

/** A request forgesync made itself failed on the network (refused, reset, TLS, too large…); `target` is where it went. */
export class EgressNetworkError extends UnavailableError {
  constructor(
    readonly url: URL,
    readonly target: ResolvedHost,
    detail: string,
    options?: ErrorOptions,
  ) {
    super(`${url.origin}: ${detail}`, options);
  }
}

/**
 * An answer's body was longer than the caller reads (`maxBytes`): the
 * request was cut off there. Counted as the bytes arrived, or refused at
 * once when the answer's `content-length` says so; never sized from it.
 */
export class EgressResponseTooLargeError extends EgressNetworkError {
  constructor(
    url: URL,
    target: ResolvedHost,
    readonly maxBytes: number,
  ) {
    super(url, target, `the response is larger than ${maxBytes} bytes`);
  }
}

/** A request forgesync made itself did not finish within its time limit. */
export class EgressTimeoutError extends UnavailableError {
  constructor(readonly url: URL, readonly timeoutMs: number) {
    super(`${url.origin} did not answer within ${timeoutMs} ms`);
  }
}
