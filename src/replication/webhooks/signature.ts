import { createHmac, createSecretKey, timingSafeEqual, type KeyObject } from 'node:crypto';
import { safeEqual } from '../../server/auth.js';

const SIGNATURE = /^sha256=([0-9a-fA-F]{64})$/;

/** `sha256=<hex>`: the HMAC-SHA256 of `body` under `secret`, as GitHub sends it (X-Hub-Signature-256). */
export function signBody(secret: string, body: Buffer | string): string {
  return `sha256=${createHmac('sha256', secret).update(body).digest('hex')}`;
}

/**
 * Whether `header` is a well-formed `sha256=<hex>` HMAC-SHA256 of the raw
 * `body` under `secret`. The digests are compared in constant time; a
 * malformed header is refused before any comparison.
 */
export function verifySignature(secret: string, body: Buffer, header: string | undefined): boolean {
  const given = header === undefined ? null : SIGNATURE.exec(header.trim());
  if (!given) return false;
  const expected = createHmac('sha256', keyOf(secret)).update(body).digest();
  return timingSafeEqual(Buffer.from(given[1]!, 'hex'), expected);
}

/** The secret as a key object, made once: importing a string key costs more than hashing a delivery. */
let cachedKey: { secret: string; key: KeyObject } | undefined;
function keyOf(secret: string): KeyObject {
  if (cachedKey?.secret !== secret) cachedKey = { secret, key: createSecretKey(Buffer.from(secret, 'utf8')) };
  return cachedKey.key;
}

/** Whether a shared-secret token (GitLab's `X-Gitlab-Token`) matches, in constant time. */
export function tokenMatches(given: string | undefined, expected: string): boolean {
  return given !== undefined && safeEqual(given, expected);
}
