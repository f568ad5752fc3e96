import type { FastifyInstance, FastifyReply, FastifyRequest, HookHandlerDoneFunction } from 'fastify';
import { ATTR } from './attributes.js';
import { enabledApi } from './span.js';
import type { Span } from '@opentelemetry/api';

/** The span of a request being served (kept on the request by the hooks below). */
const SPAN = Symbol('forgesync.span');
type TracedRequest = FastifyRequest & { [SPAN]?: Span };

/**
 * A server span per request served: started as the request arrives (the
 * parent from its `traceparent`, when a caller sent one), made the active
 * span for the handler, ended with the response's status. Named
 * `METHOD /route/:template`. With tracing off, no hook is added.
 */
export function traceHttpRequests(server: FastifyInstance): void {
  const enabled = enabledApi();
  if (!enabled) return;
  const { api, tracer } = enabled;
  server.addHook('onRequest', (request: TracedRequest, _reply: FastifyReply, done: HookHandlerDoneFunction) => {
    const route = request.routeOptions.url;
    const parent = api.propagation.extract(api.ROOT_CONTEXT, request.headers);
    request[SPAN] = tracer.startSpan(
      route ? `${request.method} ${route}` : request.method,
      {
        kind: api.SpanKind.SERVER,
        attributes: {
          [ATTR.httpRequestMethod]: request.method,
          [ATTR.urlPath]: request.url.split('?', 1)[0]!,
          [ATTR.urlScheme]: request.protocol,
          [ATTR.serverAddress]: request.hostname,
          [ATTR.clientAddress]: request.ip,
          ...(route ? { [ATTR.httpRoute]: route } : {}),
        },
      },
      parent,
    );
    done();
  });
  // The body has been read by now (its stream's callbacks run outside any context we set):
  // the handler and what it awaits run with the request's span active.
  server.addHook('preHandler', (request: TracedRequest, _reply: FastifyReply, done: HookHandlerDoneFunction) => {
    const span = request[SPAN];
    if (span) api.context.with(api.trace.setSpan(api.context.active(), span), done);
    else done();
  });
  server.addHook('onResponse', (request: TracedRequest, reply: FastifyReply, done: HookHandlerDoneFunction) => {
    const span = request[SPAN];
    if (span) {
      span.setAttribute(ATTR.httpResponseStatusCode, reply.statusCode);
      if (reply.statusCode >= 500) {
        span.setStatus({ code: api.SpanStatusCode.ERROR });
        span.setAttribute(ATTR.errorType, String(reply.statusCode));
      }
      span.end();
      request[SPAN] = undefined;
    }
    done();
  });
  server.addHook('onRequestAbort', (request: TracedRequest, done: HookHandlerDoneFunction) => {
    const span = request[SPAN];
    if (span) {
      span.setAttribute(ATTR.errorType, 'aborted');
      span.end();
      request[SPAN] = undefined;
    }
    done();
  });
}
