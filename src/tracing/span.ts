import { performance } from 'node:perf_hooks';
import type { Span, Tracer } from '@opentelemetry/api';
import { ATTR } from './attributes.js';

/**
 * The one helper instrumented code calls: `withSpan(name, attributes, fn)`.
 * With tracing off (the default) it is a plain call of `fn`: no
 * OpenTelemetry module is loaded (types only are imported here), no span
 * object is made. With tracing on (start.ts), `enableSpans` hands it the
 * API module and a tracer, loaded then.
 */

/** Attribute values a span takes; undefined ones are left out. */
export type SpanAttributes = Readonly<Record<string, string | number | boolean | undefined>>;

/** What `fn` may do with its span: add attributes it learns while it runs (a status code, an outcome). */
export interface SpanHandle {
  setAttributes(attributes: SpanAttributes): void;
}

/** Span kinds as OpenTelemetry defines them; `internal` unless said. */
export type SpanRole = 'internal' | 'server' | 'client' | 'producer' | 'consumer';

/** W3C trace context of a span, as carried in a job's data or a request's headers. */
export interface TraceCarrier {
  traceparent?: string;
  tracestate?: string;
}

export interface SpanOptions {
  role?: SpanRole;
  /** The parent, when it came from another process (a job's data, request headers); else the active span. */
  parent?: TraceCarrier | undefined;
  /** A part of something traced only: with no active span (nor `parent`), no span, just `fn` (a scheduler's periodic lease tries start no traces). */
  inTraceOnly?: boolean;
}

type Api = typeof import('@opentelemetry/api');

/** Set while tracing is on. */
let tracing: { api: Api; tracer: Tracer } | undefined;

const NOOP_HANDLE: SpanHandle = { setAttributes: () => {} };

/** The API module and tracer while tracing is on (for the HTTP server's hooks, which cannot wrap a function). */
export const enabledApi = (): { api: Api; tracer: Tracer } | undefined => tracing;

/** Whether spans are recorded in this process (see start.ts). */
export const tracingOn = (): boolean => tracing !== undefined;

/** Called by start.ts once the SDK is registered, and with undefined when it shuts down. */
export function enableSpans(enabled: { api: Api; tracer: Tracer } | undefined): void {
  tracing = enabled;
}

/**
 * Runs `fn` in a span named `name` (the active span's child, or `options.parent`'s),
 * ended when `fn` settles; a throw marks the span failed (status error, `error.type`:
 * the error's class) and is rethrown. Tracing off: just `fn`.
 */
export function withSpan<T>(name: string, attributes: SpanAttributes, fn: (span: SpanHandle) => Promise<T>, options: SpanOptions = {}): Promise<T> {
  if (!tracing) return fn(NOOP_HANDLE);
  const { api, tracer } = tracing;
  const parent = options.parent ? api.propagation.extract(api.ROOT_CONTEXT, options.parent) : api.context.active();
  if (options.inTraceOnly && !api.trace.getSpan(parent)) return fn(NOOP_HANDLE);
  const kind = SPAN_KINDS[options.role ?? 'internal'];
  return tracer.startActiveSpan(name, { kind, attributes: defined(attributes) }, parent, async (span: Span) => {
    const handle: SpanHandle = { setAttributes: (more) => span.setAttributes(defined(more)) };
    try {
      return await fn(handle);
    } catch (error) {
      // The class only, never the message: a git or HTTP error's text may carry a URL with a token in it
      // (forgesync redacts messages where it logs or stores them, with the token at hand; a span has none).
      span.setStatus({ code: api.SpanStatusCode.ERROR });
      span.setAttribute(ATTR.errorType, (error as Error)?.name ?? typeof error);
      throw error;
    } finally {
      span.end();
    }
  });
}

/**
 * Runs `fn` with `carrier`'s trace context active and no span of its own:
 * work done in a batch for one of the requests batched together (a job it
 * queues) continues that request's trace, not the batch's first request's.
 * Tracing off or no carrier: just `fn`.
 */
export function withTraceContext<T>(carrier: TraceCarrier | undefined, fn: () => Promise<T>): Promise<T> {
  if (!tracing || !carrier) return fn();
  const { api } = tracing;
  return api.context.with(api.propagation.extract(api.ROOT_CONTEXT, carrier), fn);
}

/** The active span's W3C trace context, to carry to another process; undefined when tracing is off or no span is active. */
export function activeTraceCarrier(): TraceCarrier | undefined {
  if (!tracing) return undefined;
  const carrier: TraceCarrier = {};
  tracing.api.propagation.inject(tracing.api.context.active(), carrier);
  return carrier.traceparent ? carrier : undefined;
}

// The numeric values of @opentelemetry/api's SpanKind enum (stable since 1.0), kept here so the
// map exists before the API module is loaded.
const SPAN_KINDS: Record<SpanRole, number> = { internal: 0, server: 1, client: 2, producer: 3, consumer: 4 };

function defined(attributes: SpanAttributes): Record<string, string | number | boolean> {
  const kept: Record<string, string | number | boolean> = {};
  for (const key in attributes) {
    const value = attributes[key];
    if (value !== undefined) kept[key] = value;
  }
  return kept;
}
