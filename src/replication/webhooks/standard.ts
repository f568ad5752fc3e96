import { createHmac, timingSafeEqual } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';
import { InvalidInputError } from '../../errors.js';

/*
 * Standard Webhooks (https://www.standardwebhooks.com), symmetric scheme:
 *   webhook-id         the delivery's id, the same on every retry of one event
 *   webhook-timestamp  Unix seconds of this attempt
 *   webhook-signature  space-separated `v1,<base64 HMAC-SHA256 of "<id>.<timestamp>.<raw body>">`,
 *                      one per key while a sender rotates its secret; any one matching suffices
 * The key is the base64 after `whsec_` in the secret.
 *
 * Verified here with node:crypto rather than the `standardwebhooks` package
 * (a devDependency: the tests sign with it, as a sender would). The package
 * signs a Buffer body decoded as UTF-8 rather than its raw bytes (two bodies
 * that decode alike share a signature), reads the timestamp with parseInt
 * (so "1700000000abc" passes), and brings two runtime dependencies for what
 * node:crypto does natively (a JavaScript SHA-256 and a base64 codec). This
 * is the spec over the raw body, with OpenSSL's HMAC and exact headers.
 */

/** How far webhook-timestamp may be from this server's clock, either way (the spec libraries' 5 minutes). */
export const TIMESTAMP_TOLERANCE_MS = 5 * 60_000;

/** The spec's prefix of a symmetric secret. */
const SECRET_PREFIX = 'whsec_';
/** The spec's signing secret: "Random. At least 24 bytes (192 bits, 512 maximum)". */
const MIN_KEY_BYTES = 24;
const MAX_KEY_BYTES = 64;
const BASE64 = /^[A-Za-z0-9+/]+={0,2}$/;

/**
 * The id is signed as the text before the first `.`, so an id holding one
 * would let a signature be re-read with another id (the spec says ids must
 * not contain `.`); visible ASCII only, so two joined header lines (", ")
 * are refused too. The timestamp is digits only, for the same reason.
 */
const DELIVERY_ID = /^[\x21-\x2d\x2f-\x7e]{1,256}$/;
const TIMESTAMP = /^\d{1,15}$/;

/** FORGESYNC_GENERIC_WEBHOOK_SECRET is not a Standard Webhooks secret (`whsec_<base64>`). */
export class InvalidWebhookSecretError extends InvalidInputError {}

/**
 * The HMAC key of a Standard Webhooks secret: the base64 after `whsec_`,
 * 24 to 64 bytes. Messages never repeat the secret.
 * @throws InvalidWebhookSecretError saying what is wrong and how to make one.
 */
export function decodeWebhookSecret(secret: string): Buffer {
  const howTo = `e.g. ${SECRET_PREFIX}$(openssl rand -base64 32)`;
  const text = secret.trim();
  if (!text.startsWith(SECRET_PREFIX)) {
    throw new InvalidWebhookSecretError(`must be a Standard Webhooks secret: "${SECRET_PREFIX}" followed by base64 (${howTo})`);
  }
  const encoded = text.slice(SECRET_PREFIX.length);
  const key = Buffer.from(encoded, 'base64');
  // Node's decoder skips characters it does not know: insist on the canonical text (the "=" padding
  // may be left out, as the spec's libraries allow), so that a typo cannot pass as another key.
  const canonical = key.toString('base64');
  if (!BASE64.test(encoded) || (encoded !== canonical && encoded !== canonical.replace(/=+$/, ''))) {
    throw new InvalidWebhookSecretError(`the part after "${SECRET_PREFIX}" must be standard base64: A-Z, a-z, 0-9, + and / (${howTo})`);
  }
  if (key.length < MIN_KEY_BYTES || key.length > MAX_KEY_BYTES) {
    throw new InvalidWebhookSecretError(
      `decodes to ${key.length} bytes; a Standard Webhooks key has ${MIN_KEY_BYTES} to ${MAX_KEY_BYTES} random bytes (${howTo})`,
    );
  }
  return key;
}

/** The three headers of a delivery, as sent. */
export interface StandardHeaders {
  id: string;
  /** The webhook-timestamp text (Unix seconds), exactly as it is signed. */
  timestamp: string;
  /** When the attempt was signed (from the timestamp). */
  signedAt: Date;
  /** The base64 HMACs of the `v1` entries. */
  signatures: string[];
}

/**
 * Why a delivery was refused, in the words of the spec libraries' errors
 * (the log says it; the answer does not).
 */
export type StandardRefusal =
  | 'missing required headers'
  | 'invalid signature headers'
  | 'message timestamp too old'
  | 'message timestamp too new'
  | 'no matching signature found';

export type HeaderCheck = { ok: true; headers: StandardHeaders } | { ok: false; reason: StandardRefusal };

/**
 * Reads webhook-id, webhook-timestamp and webhook-signature, and checks that
 * the timestamp is within TIMESTAMP_TOLERANCE_MS of `nowMs`: everything that
 * can be checked before the body is read.
 */
export function readStandardHeaders(headers: IncomingHttpHeaders, nowMs: number = Date.now()): HeaderCheck {
  const id = headers['webhook-id'];
  const timestamp = headers['webhook-timestamp'];
  const signature = headers['webhook-signature'];
  if (typeof id !== 'string' || typeof timestamp !== 'string' || typeof signature !== 'string' || !id || !timestamp || !signature) {
    return { ok: false, reason: 'missing required headers' };
  }
  const entries = signature.split(' ').filter((entry) => entry !== '');
  if (!DELIVERY_ID.test(id) || !TIMESTAMP.test(timestamp) || entries.length === 0) {
    return { ok: false, reason: 'invalid signature headers' };
  }
  const signedMs = Number(timestamp) * 1000;
  if (nowMs - signedMs > TIMESTAMP_TOLERANCE_MS) return { ok: false, reason: 'message timestamp too old' };
  if (signedMs - nowMs > TIMESTAMP_TOLERANCE_MS) return { ok: false, reason: 'message timestamp too new' };
  // Other schemes (`v1a`, ed25519) may ride along for other receivers: only v1 is ours.
  const signatures = entries.filter((entry) => entry.startsWith('v1,')).map((entry) => entry.slice(3));
  return { ok: true, headers: { id, timestamp, signedAt: new Date(signedMs), signatures } };
}

/**
 * Whether one of the `v1` signatures is the HMAC-SHA256 under `key` of
 * `<id>.<timestamp>.<raw body>`. Each is compared in constant time, as its
 * base64 text (44 characters, a length anyone knows), and every one is
 * compared, so the time taken does not say which matched.
 */
export function verifyStandardSignature(key: Buffer, headers: StandardHeaders, body: Buffer): boolean {
  const expected = Buffer.from(
    createHmac('sha256', key).update(`${headers.id}.${headers.timestamp}.`).update(body).digest('base64'),
  );
  let matched = false;
  for (const signature of headers.signatures) {
    const given = Buffer.from(signature);
    if (given.length === expected.length && timingSafeEqual(given, expected)) matched = true;
  }
  return matched;
}
