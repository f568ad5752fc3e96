export { ATTR, DB_SYSTEM_NAME } from './attributes.js';
export { activeTraceCarrier, tracingOn, withSpan, withTraceContext, type SpanAttributes, type SpanHandle, type SpanOptions, type SpanRole, type TraceCarrier } from './span.js';
export { exportProtocol, startTracing, stopTracing, tracingOffReason } from './start.js';
export { traceEnqueue, traceJobRun, type TracedJob } from './jobs.js';
export { traceHttpRequests } from './http-server.js';
export { traceClientRequest, type TracedRequest } from './http-client.js';
