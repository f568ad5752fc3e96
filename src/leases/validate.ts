import { isWellFormed, shown } from '../util/shown.js';
import { InvalidLeaseKeyError, InvalidLeaseOptionError } from './errors.js';
import { MAX_OWNER_LENGTH, ownerName } from './owner.js';

/** Longest key accepted, in characters; every backend indexes the whole key. */
export const MAX_KEY_LENGTH = 255;
/** Shortest ttl accepted: below this, network round trips alone eat the lease. */
export const MIN_TTL_MS = 10;
/** Longest ttl accepted: a day. Long leases are what this project exists to avoid. */
export const MAX_TTL_MS = 24 * 60 * 60 * 1000;
// C0, DEL and C1: a terminal may read C1 (\u009b) as the start of an escape sequence.
// eslint-disable-next-line no-control-regex
const CONTROL_CHARS = /[\u0000-\u001f\u007f-\u009f]/;


export function validateKey(key: unknown): string {
  if (typeof key !== 'string' || key.length === 0) {
    throw new InvalidLeaseKeyError('lease key must be a non-empty string');
  }
  if (key.length > MAX_KEY_LENGTH) {
    throw new InvalidLeaseKeyError(`lease key is ${key.length} characters long; the limit is ${MAX_KEY_LENGTH}`);
  }
  if (CONTROL_CHARS.test(key)) {
    throw new InvalidLeaseKeyError(`lease key ${JSON.stringify(key)} contains control characters`);
  }
  // A lone surrogate is no character: PostgreSQL, MySQL and Redis store each as U+FFFD, so two keys would be one lease.
  if (!isWellFormed(key)) {
    throw new InvalidLeaseKeyError(`lease key ${JSON.stringify(key)} is not well-formed Unicode (a lone surrogate)`);
  }
  // SQL collations (MySQL's PAD SPACE among them) may treat "a" and "a " as one
  // key; refusing edge whitespace keeps keys distinct on every backend.
  if (key.trim() !== key) {
    throw new InvalidLeaseKeyError(`lease key ${JSON.stringify(key)} must not start or end with whitespace`);
  }
  return key;
}

/** Validates a list prefix: like a key, but may be empty. */
export function validatePrefix(prefix: unknown): string {
  if (prefix === undefined || prefix === '') return '';
  return validateKey(prefix);
}

export function validateTtl(ttlMs: unknown, name = 'ttlMs'): number {
  if (typeof ttlMs !== 'number' || !Number.isInteger(ttlMs)) {
    throw new InvalidLeaseOptionError(`${name} must be an integer number of milliseconds, got ${shown(ttlMs)}`);
  }
  if (ttlMs < MIN_TTL_MS || ttlMs > MAX_TTL_MS) {
    throw new InvalidLeaseOptionError(
      `${name} must be between ${MIN_TTL_MS} ms and ${MAX_TTL_MS} ms (24 h), got ${ttlMs}`,
    );
  }
  return ttlMs;
}

export function validateDuration(value: unknown, name: string, min: number, max = MAX_TTL_MS): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > max) {
    throw new InvalidLeaseOptionError(`${name} must be an integer between ${min} and ${max} ms, got ${shown(value)}`);
  }
  return value;
}

export function validateOwnerName(owner: unknown): string {
  if (owner === undefined) return defaultOwnerName();
  if (typeof owner !== 'string' || owner.trim().length === 0) {
    throw new InvalidLeaseOptionError('owner must be a non-empty string such as "full sync"');
  }
  if (owner.length > MAX_OWNER_LENGTH || CONTROL_CHARS.test(owner) || !isWellFormed(owner)) {
    throw new InvalidLeaseOptionError(
      `owner must be at most ${MAX_OWNER_LENGTH} printable characters, got ${JSON.stringify(owner.slice(0, 40))}…`,
    );
  }
  return owner;
}

export function validateFence(fence: unknown, name = 'fence'): bigint | undefined {
  if (fence === undefined || fence === null) return undefined;
  if (typeof fence === 'bigint' || typeof fence === 'number' || typeof fence === 'string') {
    try {
      const value = BigInt(fence);
      if (value > 0n) return value;
    } catch {
      // fall through to the error below
    }
  }
  throw new InvalidLeaseOptionError(`${name} must be a positive integer, got ${shown(fence)}`);
}

/**
 * Largest floor a lease's fence may be raised above. The raised fence, floor + 1, then stays a
 * safe JavaScript integer: exact in Redis's Lua (which computes it in doubles) and for callers
 * that keep fences as numbers. MySQL's clock fences (about 1.8e15) are far below it.
 */
export const MAX_FENCE_FLOOR = BigInt(Number.MAX_SAFE_INTEGER) - 1n;

/** A floor for raiseFence: a fence (required), at most MAX_FENCE_FLOOR. */
export function validateFloor(floor: unknown): bigint {
  const value = validateFence(floor, 'floor');
  if (value === undefined) throw new InvalidLeaseOptionError(`floor must be a positive integer, got ${shown(floor)}`);
  if (value > MAX_FENCE_FLOOR) {
    throw new InvalidLeaseOptionError(`floor must be at most ${MAX_FENCE_FLOOR} (2^53 - 2), got ${value}`);
  }
  return value;
}

function defaultOwnerName(): string {
  return process.title && process.title !== 'node' ? ownerName(process.title) : 'forgesync';
}
