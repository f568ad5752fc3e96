import { createHash, createHmac } from 'node:crypto';
import { InvalidSinkSecretError } from './errors.js';

/**
 * Standard Webhooks signing (https://www.standardwebhooks.com/, the spec's
 * "symmetric" scheme, as its `standardwebhooks` libraries verify it).
 */

const PREFIX = 'whsec_';
/** Padded standard base64, as the spec's secrets are written (the verifying libraries decode strictly). */
const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

/**
 * The HMAC key of a webhook secret. Per the spec a secret is base64 of the
 * key bytes, optionally after `whsec_`: that is decoded. A secret without
 * the prefix that is not base64 is taken as its UTF-8 bytes (what the
 * libraries' "raw" format does), so a plain shared password still works;
 * a plain secret that happens to be valid base64 is decoded, as every
 * verifier would. A `whsec_` secret whose rest is not base64 is refused
 * rather than used otherwise: it was cut or mangled, and no verifier would
 * accept what it signs.
 * @throws InvalidSinkSecretError (the message never contains the secret)
 */
export function webhookKey(secret: string): Buffer {
  if (secret.length === 0) throw new InvalidSinkSecretError('the webhook signing secret is empty; define the feed secret named by --secret with the secret, or name none to send unsigned requests');
  const prefixed = secret.startsWith(PREFIX);
  const text = prefixed ? secret.slice(PREFIX.length) : secret;
  if (text.length > 0 && BASE64.test(text)) return Buffer.from(text, 'base64');
  if (prefixed) {
    throw new InvalidSinkSecretError(
      `the webhook signing secret starts with ${PREFIX} but what follows is not padded base64 (a Standard Webhooks secret is ${PREFIX} followed by the base64 of its key bytes); copy the whole secret again`,
    );
  }
  return Buffer.from(secret, 'utf8');
}

/**
 * The `webhook-id` of a request. One event: its id, stable across retries,
 * so a receiver deduplicating on `webhook-id` drops a redelivery. A batch:
 * `batch_` and a digest of all its event ids in order — the same batch
 * retried has the same id, while a batch with any other events has another
 * (the first event's id alone would make a receiver that deduplicates on
 * `webhook-id` drop a later batch starting with a retried event, and lose
 * the rest). Receivers of batches should deduplicate per event, on its id.
 */
export function webhookId(eventIds: readonly string[]): string {
  if (eventIds.length === 1) return eventIds[0]!;
  return `batch_${createHash('sha256').update(JSON.stringify(eventIds)).digest('base64url').slice(0, 32)}`;
}

/** The three Standard Webhooks headers of `body`, signed at `timestampSeconds` (unix seconds). */
export function webhookHeaders(key: Buffer, id: string, body: string, timestampSeconds = Math.floor(Date.now() / 1000)): Record<string, string> {
  const signature = createHmac('sha256', key).update(`${id}.${timestampSeconds}.${body}`).digest('base64');
  return { 'webhook-id': id, 'webhook-timestamp': String(timestampSeconds), 'webhook-signature': `v1,${signature}` };
}
