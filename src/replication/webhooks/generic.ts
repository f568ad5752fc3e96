import type { FastifyRequest } from 'fastify';
import type { Replication } from '../module.js';
import { parsePayload } from './body.js';
import type { DeliveryOutcome } from './delivery.js';
import { requestSources } from './match.js';
import { header } from '../../server/routes/common.js';
import type { ReceiverSpec } from './receiver.js';
import {
  decodeWebhookSecret,
  readStandardHeaders,
  TIMESTAMP_TOLERANCE_MS,
  verifyStandardSignature,
  type StandardHeaders,
  type StandardRefusal,
} from './standard.js';

const SECRET_ENV = 'FORGESYNC_GENERIC_WEBHOOK_SECRET';

/**
 * The body of every answer to an authenticated delivery, whatever became of
 * it (recorded, unknown or disabled source, duplicate): the endpoint must not
 * tell names that exist from names that do not. The log line and
 * `forgesync_webhooks_total` say what really happened.
 */
const ANSWER = { result: 'accepted' } as const;

/** The message of every 401, whatever check failed (the log line names it). */
const UNAUTHORIZED =
  'the delivery is not signed as Standard Webhooks requires: webhook-id, webhook-timestamp (Unix seconds, ' +
  `within ${TIMESTAMP_TOLERANCE_MS / 60_000} minutes) and webhook-signature (v1,<base64 HMAC-SHA256 of "<id>.<timestamp>.<body>">) ` +
  `with the key of ${SECRET_ENV}`;

function unauthorized(reason: StandardRefusal): DeliveryOutcome {
  return { status: 401, result: 'unauthorized', reason, body: { error: 'unauthorized', message: UNAUTHORIZED } };
}

/** A delivery whose signature was verified, and when its timestamp was checked. */
interface Verified {
  headers: StandardHeaders;
  checkedAt: Date;
}

/**
 * `POST /hooks/generic/:source`, for any other forge or script: a Standard
 * Webhooks delivery (see standard.ts) under FORGESYNC_GENERIC_WEBHOOK_SECRET
 * requests a sync of the source named in the path. The signature does not
 * cover the path, so each webhook-id is acted on once, whatever name it is
 * sent to (Replication.oncePerDelivery): a replay within the window is a
 * duplicate, and after it the timestamp check refuses it. Every
 * authenticated delivery is answered 202 `{ "result": "accepted" }`.
 * The body is not needed; when it is JSON it must be well-formed (400).
 */
export function genericReceiver(replication: Replication): ReceiverSpec {
  const secret = replication.webhookSecrets.generic;
  // The setting's parser refused a malformed secret already; decode it once.
  const key = secret === undefined ? undefined : decodeWebhookSecret(secret);
  const verified = new WeakMap<FastifyRequest, Verified>();
  return {
    provider: 'generic',
    path: '/generic/:source',
    summary: 'Generic webhook (Standard Webhooks)',
    description:
      'Requests a sync of the named source. Signed as Standard Webhooks: webhook-id, webhook-timestamp (within 5 minutes), ' +
      'webhook-signature v1,<base64 HMAC-SHA256 of "<id>.<timestamp>.<body>">. Each webhook-id is acted on once. ' +
      'Every authenticated delivery is answered 202 {"result":"accepted"}.',
    secret,
    secretEnv: SECRET_ENV,
    // Before the body is read: a delivery without usable headers costs nothing more.
    checkHeaders: (request) => {
      const read = readStandardHeaders(request.headers);
      return read.ok ? null : unauthorized(read.reason);
    },
    verifyBody: (request, raw) => {
      // The window again, now that the body is in: a body sent slowly must not stretch it.
      const checkedAt = new Date();
      const read = readStandardHeaders(request.headers, checkedAt.getTime());
      if (!read.ok) return unauthorized(read.reason);
      if (!verifyStandardSignature(key!, read.headers, raw)) return unauthorized('no matching signature found');
      verified.set(request, { headers: read.headers, checkedAt });
      return null;
    },
    handle: async (request, raw) => {
      const delivery = verified.get(request);
      if (!delivery) throw new Error('generic webhook: a delivery reached handle() unverified');
      const type = header(request, 'content-type') ?? '';
      if (raw.length > 0 && /json/i.test(type)) parsePayload(raw, type); // well-formed or 400 (nothing claimed); the content is not needed
      const name = (request.params as { source: string }).source;
      const { id, signedAt } = delivery.headers;
      const run = await replication.oncePerDelivery(
        // Claimed until the timestamp leaves the window, judged by the instant it was checked, so a
        // delivery checked just before its expiry cannot take over its own expired claim.
        { provider: 'generic', id, receivedAt: delivery.checkedAt, expiresAt: new Date(signedAt.getTime() + TIMESTAMP_TOLERANCE_MS) },
        async () => requestSources(replication, 'generic', await sourcesNamed(replication, name)),
      );
      if (run.duplicate) {
        return { status: 202, result: 'duplicate', event: 'generic', reason: 'this webhook-id was acted on before; nothing recorded', body: ANSWER };
      }
      return { ...run.value, body: ANSWER };
    },
  };
}

/** The source named `name`, as a list for requestSources (empty when there is none). */
async function sourcesNamed(replication: Replication, name: string) {
  const source = await replication.sources.find(name);
  return source ? [source] : [];
}
