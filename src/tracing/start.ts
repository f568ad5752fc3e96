import { createLogger } from '../logging/logger.js';
import { enableSpans, tracingOn } from './span.js';

/**
 * Turns tracing on in this process when the standard OpenTelemetry
 * variables ask for it: `OTEL_EXPORTER_OTLP_ENDPOINT` or
 * `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` set, `OTEL_SDK_DISABLED` not true,
 * `OTEL_TRACES_EXPORTER` unset or `otlp`. Only then is the SDK imported: a
 * process without them loads no OpenTelemetry module at all (see span.ts).
 * `OTEL_EXPORTER_OTLP_(TRACES_)PROTOCOL` picks the encoding: `http/protobuf`
 * (the specification's default) or `http/json`; `grpc` is not offered (its
 * exporter brings a gRPC stack: point it at a collector's OTLP/HTTP port).
 * The SDK reads the rest itself: OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES,
 * OTEL_TRACES_SAMPLER(_ARG), OTEL_EXPORTER_OTLP_(TRACES_)HEADERS, _TIMEOUT,
 * OTEL_BSP_* (batching).
 */

/** How long shutdown waits for the last spans to be exported (a receiver that is down must not hold up an exit). */
const SHUTDOWN_TIMEOUT_MS = 5000;

/** Shuts the provider down, set while tracing is on. */
let shutdownProvider: (() => Promise<void>) | undefined;

/** Why tracing is off for `env`, or null when it should be on. */
export function tracingOffReason(env: NodeJS.ProcessEnv): string | null {
  if (['true', '1'].includes((env.OTEL_SDK_DISABLED ?? '').trim().toLowerCase())) return 'OTEL_SDK_DISABLED is true';
  const exporter = (env.OTEL_TRACES_EXPORTER ?? '').trim().toLowerCase();
  if (exporter !== '' && exporter !== 'otlp') return `OTEL_TRACES_EXPORTER is "${exporter}" (forgesync exports otlp only)`;
  if (!traceEndpoint(env)) return 'no OTEL_EXPORTER_OTLP_ENDPOINT is set';
  const protocol = exportProtocol(env);
  if (!PROTOCOLS.includes(protocol)) return `OTEL_EXPORTER_OTLP_PROTOCOL is "${protocol}" (forgesync exports ${PROTOCOLS.join(' or ')}: point it at a collector's OTLP/HTTP port, 4318)`;
  return null;
}

/** Where spans go, as the SDK picks it: the traces' own variable first, trimmed; '' or undefined when neither is set. */
export const traceEndpoint = (env: NodeJS.ProcessEnv): string | undefined =>
  env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT?.trim() || env.OTEL_EXPORTER_OTLP_ENDPOINT?.trim();

const PROTOCOLS: readonly string[] = ['http/protobuf', 'http/json'];

/** The OTLP encoding asked for, the traces' own variable first; `http/protobuf` by default, as the specification has it. */
export const exportProtocol = (env: NodeJS.ProcessEnv): string =>
  (env.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL?.trim() || env.OTEL_EXPORTER_OTLP_PROTOCOL?.trim() || 'http/protobuf').toLowerCase();

/**
 * Starts a NodeTracerProvider (batching, OTLP over HTTP in the protocol's encoding)
 * registered as the global one, when `env` asks for it (see above); does
 * nothing otherwise or when already started. Resolves to whether tracing is on.
 */
export async function startTracing(env: NodeJS.ProcessEnv = process.env): Promise<boolean> {
  if (tracingOn()) return true;
  const off = tracingOffReason(env);
  if (off !== null) {
    // An endpoint asked for traces in an encoding not offered: say so once (the other reasons are deliberate).
    if (off.startsWith('OTEL_EXPORTER_OTLP_PROTOCOL')) createLogger().warn({ event: 'tracing_off', reason: off }, `tracing: off: ${off}`);
    return false;
  }
  const [api, { NodeTracerProvider, BatchSpanProcessor }, { OTLPTraceExporter }, resources] = await Promise.all([
    import('@opentelemetry/api'),
    import('@opentelemetry/sdk-trace-node'),
    exportProtocol(env) === 'http/json' ? import('@opentelemetry/exporter-trace-otlp-http') : import('@opentelemetry/exporter-trace-otlp-proto'),
    import('@opentelemetry/resources'),
  ]);
  // OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES (the env detector) win over the default name.
  const detected = resources.detectResources({ detectors: [resources.envDetector, resources.hostDetector, resources.serviceInstanceIdDetector] });
  const resource = resources.resourceFromAttributes({ 'service.name': 'forgesync' }).merge(detected);
  const provider = new NodeTracerProvider({ resource, spanProcessors: [new BatchSpanProcessor(new OTLPTraceExporter())] });
  // The AsyncLocalStorage context manager and the W3C trace context propagator.
  provider.register();
  // The SDK's own warnings (a collector that does not answer, spans dropped from a full queue) as log lines of ours.
  const logger = createLogger().child({ component: 'tracing' });
  const warn = (message: string, ...details: unknown[]) =>
    logger.warn({ event: 'tracing_warning', detail: details.map((detail) => String((detail as Error)?.message ?? detail)).join('; ').slice(0, 500) }, `tracing: ${message}`);
  api.diag.setLogger({ error: warn, warn, info: () => {}, debug: () => {}, verbose: () => {} }, api.DiagLogLevel.WARN);
  enableSpans({ api, tracer: api.trace.getTracer('forgesync') });
  shutdownProvider = async () => {
    enableSpans(undefined);
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<void>((resolve) => (timer = setTimeout(resolve, SHUTDOWN_TIMEOUT_MS).unref()));
    await Promise.race([provider.shutdown().catch(() => undefined), late]);
    clearTimeout(timer);
    api.trace.disable();
    api.diag.disable();
    api.context.disable();
    api.propagation.disable();
  };
  return true;
}

/** Exports the spans still batched and stops tracing (end of a CLI command, `serve` shutdown); nothing when it is off. */
export async function stopTracing(): Promise<void> {
  const shutdown = shutdownProvider;
  shutdownProvider = undefined;
  await shutdown?.();
}
