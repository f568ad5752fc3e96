import { ConflictError, InvalidInputError, UnavailableError } from '../errors.js';
import type { LeaseHolder } from './types.js';

/** `name(pid)`: how a holder is named in every message (seed 004). */
export function describeHolder(holder: Pick<LeaseHolder, 'owner'>): string {
  return `${holder.owner.name}(${holder.owner.pid})`;
}

/** The skip line logged when a try finds the key taken. */
export function skipMessage(holder: LeaseHolder | null): string {
  return holder
    ? `operation skipped - process locked by "${describeHolder(holder)}"`
    : 'operation skipped - process locked';
}

/** The key is held by someone else (and stayed so for the whole wait, if any). */
export class LeaseUnavailableError extends ConflictError {
  constructor(
    readonly key: string,
    readonly holder: LeaseHolder | null,
    readonly waitedMs = 0,
  ) {
    super(
      `lease "${key}" is unavailable${waitedMs > 0 ? ` after waiting ${waitedMs} ms` : ''}: ` +
        (holder ? `process locked by "${describeHolder(holder)}" (fence ${holder.fence})` : 'process locked'),
    );
  }
}

/** The token no longer holds the key: released, force-released or taken over. */
export class LeaseLostError extends ConflictError {
  constructor(readonly key: string, detail = 'it was released or taken over by another holder') {
    super(`lease "${key}" is no longer held by this token: ${detail}`);
  }
}

/** The lease lapsed (or was about to) before it could be extended. */
export class LeaseExpiredError extends ConflictError {
  constructor(readonly key: string, detail = 'its time to live ran out') {
    super(`lease "${key}" has expired: ${detail}; acquire it again instead of extending`);
  }
}

/** The key is empty, too long or contains control characters. */
export class InvalidLeaseKeyError extends InvalidInputError {
}

/** A ttl, wait, retry or owner option is out of range. */
export class InvalidLeaseOptionError extends InvalidInputError {
}

/** The lease URL names a scheme forgesync has no backend for, or is malformed. */
export class UnsupportedLeaseUrlError extends InvalidInputError {
}

/** The backend did not answer (connection refused, timeout, authentication). */
export class LeaseBackendUnavailableError extends UnavailableError {
  constructor(readonly backend: string, readonly url: string, cause: unknown) {
    super(`lease backend ${backend} at ${url} is unreachable: ${(cause as Error)?.message ?? String(cause)}`, {
      cause,
    });
  }
}

/** The manager was closed; no further calls are accepted. */
export class LeaseManagerClosedError extends UnavailableError {
  constructor() {
    super('the lease manager is closed');
  }
}
