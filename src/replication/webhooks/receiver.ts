import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Replication } from '../module.js';
import { statusOfError } from '../../errors.js';
import { InvalidPayloadError } from './body.js';
import { ATTR, tracingOn, withSpan } from '../../tracing/index.js';
import { finish, refusal, type DeliveryOutcome, type ReceiverContext, type WebhookProvider } from './delivery.js';

/** One webhook endpoint: how it authenticates and what it does with a delivery. */
export interface ReceiverSpec {
  provider: WebhookProvider;
  /** Route path inside the `/hooks` prefix. */
  path: string;
  summary: string;
  description: string;
  /** The secret; undefined → the endpoint answers 404 naming `secretEnv`. */
  secret: string | undefined;
  secretEnv: string;
  /** Header checks before the body is read (missing signature, wrong token); a refusal or null. */
  checkHeaders(request: FastifyRequest, secret: string): DeliveryOutcome | null;
  /** Checks the raw body against its signature; a refusal (401) or null. */
  verifyBody?(request: FastifyRequest, raw: Buffer, secret: string): DeliveryOutcome | null;
  /**
   * Acts on a delivery that passed the checks above (after the request is durably recorded,
   * it answers); GitHub's and GitLab's read theirs, signature included, through the readers (index.ts).
   */
  handle(request: FastifyRequest, raw: Buffer): Promise<DeliveryOutcome>;
}

/**
 * Registers one receiver in its own encapsulated scope: the body is kept as
 * the raw Buffer (any content type, Fastify's bodyLimit → 413) so the
 * signature is checked over the exact bytes before anything is parsed;
 * headers are checked before the body is even read; every answer, refusals
 * and parser errors included, is counted and logged once by finish().
 */
export function registerReceiver(replication: Replication, spec: ReceiverSpec) {
  const logger = replication.logger.child({ component: 'webhooks' });
  const context: ReceiverContext = { replication, logger, deliveryLogger: logger.child({}, { redact: [] }), provider: spec.provider };
  return async (scope: FastifyInstance) => {
    scope.removeAllContentTypeParsers();
    scope.addContentTypeParser('*', { parseAs: 'buffer' }, (_request, body, done) => done(null, body));
    scope.setErrorHandler((error: FastifyError, request, reply) => finish(context, request, reply, outcomeOfError(error, request, context)));

    scope.post(
      spec.path,
      {
        schema: { tags: ['webhooks'], summary: spec.summary, description: spec.description },
        onRequest: async (request, reply) => {
          const secret = spec.secret;
          const refused = !secret
            ? refusal(404, 'unauthorized', 'webhook_not_configured', `${spec.provider} webhooks are not enabled on this server: set ${spec.secretEnv}`)
            : spec.checkHeaders(request, secret);
          if (refused) return finish(context, request, reply, refused);
        },
      },
      async (request: FastifyRequest, reply: FastifyReply) => {
        const raw = Buffer.isBuffer(request.body) ? request.body : Buffer.alloc(0);
        const refused = spec.verifyBody?.(request, raw, spec.secret!);
        if (refused) return finish(context, request, reply, refused);
        const outcome = await withSpan(`webhook ${spec.provider}`, { [ATTR.webhookProvider]: spec.provider }, async (span) => {
          const handled = await spec.handle(request, raw);
          // Built only when traced: the webhook hot path makes no list of names for a span that records nothing.
          if (tracingOn()) span.setAttributes({ [ATTR.webhookResult]: handled.result, [ATTR.source]: handled.sources?.slice(0, 10).join(',') });
          return handled;
        });
        return finish(context, request, reply, outcome);
      },
    );
  };
}

/** How an error thrown while reading or handling a delivery is answered. */
function outcomeOfError(error: FastifyError, request: FastifyRequest, context: ReceiverContext): DeliveryOutcome {
  if (error instanceof InvalidPayloadError) return refusal(400, 'invalid', 'invalid_payload', error.message);
  const status = statusOfError(error) ?? (typeof error.statusCode === 'number' && error.statusCode >= 400 ? error.statusCode : 500);
  if (status === 413) {
    return refusal(413, 'invalid', 'payload_too_large', `the body is larger than the limit of ${request.routeOptions.bodyLimit} bytes`);
  }
  if (status < 500) return refusal(status, 'invalid', error.code ?? 'invalid', error.message);
  context.logger.error({ event: 'webhook_error', provider: context.provider, err: error }, 'webhook delivery failed');
  return refusal(500, 'error', 'internal', 'internal error; see the server log (the forge may redeliver)');
}
