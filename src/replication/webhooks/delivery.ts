import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Replication } from '../module.js';
import type { Logger } from '../../logging/logger.js';
import type { ProjectDelivery } from './github-project.js';

/** The webhook receivers, the `provider` label of `forgesync_webhooks_total`. */
export type WebhookProvider = 'github' | 'gitlab' | 'generic';

/**
 * What became of a delivery, the `result` label of `forgesync_webhooks_total`:
 * a request was recorded (`accepted`), nothing to do (`ignored`), no source
 * matches (`unknown_repository`), a delivery id acted on before (`duplicate`),
 * refused for its signature or token, or because the receiver is not
 * configured (`unauthorized`), unreadable (`invalid`: malformed, oversized),
 * or a server-side failure (`error`). Operator-side: a receiver may answer
 * the sender the same for several of them (the generic one does).
 */
export type WebhookResult = 'accepted' | 'ignored' | 'unknown_repository' | 'duplicate' | 'unauthorized' | 'invalid' | 'error';

/** How a delivery is answered and logged. */
export interface DeliveryOutcome {
  status: number;
  result: WebhookResult;
  /** The forge's event name (`push`, `Push Hook`…), for the log. */
  event?: string | undefined;
  /** Sources a request was recorded for. */
  sources?: string[];
  /** Imports that will fetch again the objects a project delivery named. */
  imports?: string[];
  /** Why nothing (or something unusual) was done; returned and logged. */
  reason?: string;
  /** Log at warn although it succeeded (the operator should act, e.g. a renamed upstream). */
  warn?: boolean;
  /** The response body; default `{ result, sources?, reason? }`. */
  body?: Record<string, unknown>;
}

/**
 * A sync request for the sources matching `keys` (`note` goes in the answer
 * and the log; a warning when `warnWhenAccepted` and a request was recorded).
 */
export interface SyncRequestIntent {
  event: string;
  keys: (string | null)[];
  note?: string;
  warnWhenAccepted?: boolean;
}

/**
 * What a delivery asks for, once read (see read.ts): an answer as it
 * stands (ping, ignored, refused), or a sync request, a project delivery
 * for whoever follows the repository's project data (github-project.ts),
 * or both (a renamed repository). Plain data, so a reader thread can send
 * it back.
 */
export type DeliveryIntent = { answer: DeliveryOutcome } | { request: SyncRequestIntent; project?: ProjectDelivery } | { project: ProjectDelivery };

/** Most source names written to one log line. */
const LOGGED_SOURCES = 10;

/** Headers that carry the forge's delivery id. */
const DELIVERY_HEADERS = ['x-github-delivery', 'x-gitlab-event-uuid', 'x-gitlab-webhook-uuid', 'webhook-id'];

/** A refusal: 4xx with `{ error, message }`. */
export function refusal(status: number, result: WebhookResult, error: string, message: string): DeliveryOutcome {
  return { status, result, reason: message, body: { error, message } };
}

/** What finish() needs: where to count and log, and for which receiver. */
export interface ReceiverContext {
  replication: Replication;
  /** The webhooks logger (`component: webhooks`), not the HTTP access logger (warn and above only). */
  logger: Logger;
  /**
   * The same, without the key-based redaction of secret-named fields, for
   * finish()'s line: its fields are fixed below and none is named like a
   * secret, so on the hot path the redaction would only cost (about half
   * the line's time). Errors, whose objects carry any fields, go to `logger`.
   */
  deliveryLogger: Logger;
  provider: WebhookProvider;
}

/**
 * Answers a delivery: counts it in `forgesync_webhooks_total{provider,result}`
 * and writes one log line (ids, event, result, source names; never the
 * payload or a secret).
 */
export function finish(context: ReceiverContext, request: FastifyRequest, reply: FastifyReply, outcome: DeliveryOutcome): FastifyReply {
  const { provider, deliveryLogger: logger } = context;
  context.replication.metrics.webhooks.inc({ provider, result: outcome.result });
  const delivery = DELIVERY_HEADERS.map((name) => request.headers[name]).find((value) => typeof value === 'string');
  const fields = {
    event: 'webhook',
    provider,
    hook_event: outcome.event,
    delivery: typeof delivery === 'string' ? delivery.slice(0, 100) : undefined,
    result: outcome.result,
    status: outcome.status,
    sources: outcome.sources?.slice(0, LOGGED_SOURCES),
    imports: outcome.imports?.slice(0, LOGGED_SOURCES),
    reason: outcome.reason,
    duration_ms: Math.round(reply.elapsedTime * 100) / 100,
  };
  const message = `webhook ${provider}${outcome.event ? ` ${outcome.event}` : ''}: ${outcome.result}`;
  if (outcome.status >= 500) logger.error(fields, message);
  else if (outcome.status >= 400 || outcome.warn) logger.warn(fields, message);
  else logger.info(fields, message);
  const body = outcome.body ?? {
    result: outcome.result,
    ...(outcome.sources?.length ? { sources: outcome.sources } : {}),
    ...(outcome.imports?.length ? { imports: outcome.imports } : {}),
    ...(outcome.reason ? { reason: outcome.reason } : {}),
  };
  return reply.code(outcome.status).send(body);
}
