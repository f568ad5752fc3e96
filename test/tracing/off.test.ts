// Tracing costs nothing when it is off: a CLI command run without the OTEL_*
// variables (or with OTEL_SDK_DISABLED=true) loads no OpenTelemetry SDK
// module and sends nothing (@opentelemetry/api alone is loaded, by prom-client's
// process metrics, which read the active span for exemplars: a no-op without a provider); the same command with OTEL_EXPORTER_OTLP_ENDPOINT set
// loads the SDK and exports (so the check can fail). Runs the built CLI
// (npm run build) in child processes, each with its own module cache.
import { execFile } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { requireBuilt } from '../support/cluster/processes.js';
import { tracingOffReason } from '../../src/tracing/index.js';
import { OtlpReceiver } from './receiver.js';

const run = promisify(execFile);
const dist = (path: string) => fileURLToPath(new URL(`../../dist/${path}`, import.meta.url));

// Starts tracing as the CLI does (a no-op when the variables say off), makes a span through the
// helper instrumented code uses, runs `forgesync lease list` (whose end exports the spans), then
// prints the OpenTelemetry modules in the process's module cache (the SDK is CommonJS: an
// import() of it lands there).
const PROBE = `
import { createRequire } from 'node:module';
const tracing = await import(${JSON.stringify(dist('tracing/index.js'))});
const { main } = await import(${JSON.stringify(dist('cli/main.js'))});
const on = await tracing.startTracing();
await tracing.withSpan('probe', { 'probe.on': on }, async () => {});
const code = await main(['node', 'forgesync', '--data-dir', process.env.PROBE_DATA_DIR, 'lease', 'list']);
const loaded = [...new Set(Object.keys(createRequire(import.meta.url).cache).flatMap((path) => path.match(/@opentelemetry[/][^/]+/g) ?? []))].sort();
process.stdout.write(JSON.stringify({ on, code, loaded }));
`;

/** What a process loads with tracing off: the API package only (see above), never the SDK, the exporter or the resources. */
const API_ONLY = ['@opentelemetry/api'];

async function probe(env: Record<string, string>): Promise<{ on: boolean; code: number; loaded: string[]; stderr: string }> {
  const dataDir = mkdtempSync(join(tmpdir(), 'forgesync-tracing-off-'));
  const { stdout, stderr } = await run(process.execPath, ['--input-type=module', '-e', PROBE], {
    env: { PATH: process.env.PATH, HOME: process.env.HOME, PROBE_DATA_DIR: dataDir, ...env },
    timeout: 60_000,
  });
  return { ...JSON.parse(stdout.slice(stdout.lastIndexOf('{"on"'))), stderr };
}

describe('tracing off', () => {
  let receiver: OtlpReceiver;

  beforeAll(async () => {
    requireBuilt();
    receiver = await OtlpReceiver.start();
  });
  afterAll(async () => receiver?.close());

  it('loads no OpenTelemetry SDK module and sends nothing without OTEL_EXPORTER_OTLP_ENDPOINT', async () => {
    const result = await probe({});
    expect(result).toMatchObject({ on: false, code: 0, loaded: API_ONLY });
    expect(result.stderr).not.toContain('tracing_off');
  });

  it('loads none and sends nothing with OTEL_SDK_DISABLED=true, the endpoint set', async () => {
    const result = await probe({ OTEL_EXPORTER_OTLP_ENDPOINT: receiver.endpoint, OTEL_SDK_DISABLED: 'true' });
    expect(result).toMatchObject({ on: false, code: 0, loaded: API_ONLY });
    expect(receiver.requests).toBe(0);
  });

  it('loads none and sends nothing when OTEL_EXPORTER_OTLP_PROTOCOL asks for grpc, which it does not offer', async () => {
    const result = await probe({ OTEL_EXPORTER_OTLP_ENDPOINT: receiver.endpoint, OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' });
    expect(result).toMatchObject({ on: false, code: 0, loaded: API_ONLY });
    expect(result.stderr).toMatch(/"event":"tracing_off".*grpc/);
    expect(receiver.requests).toBe(0);
    expect(tracingOffReason({ OTEL_EXPORTER_OTLP_ENDPOINT: receiver.endpoint, OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' })).toMatch(/"grpc".*http\/protobuf or http\/json/);
  });

  it('with the endpoint set, loads the SDK and exports the spans in protobuf by the end of the command', async () => {
    const result = await probe({ OTEL_EXPORTER_OTLP_ENDPOINT: receiver.endpoint });
    expect(result.on).toBe(true);
    expect(result.code).toBe(0);
    expect(result.loaded).toEqual(expect.arrayContaining(['@opentelemetry/sdk-trace-base', '@opentelemetry/sdk-trace-node', '@opentelemetry/exporter-trace-otlp-proto', '@opentelemetry/resources']));
    expect(result.loaded).not.toContain('@opentelemetry/exporter-trace-otlp-http');
    expect(receiver.contentTypes).toEqual(new Set(['application/x-protobuf']));
    const span = receiver.spans.find((received) => received.name === 'probe');
    expect(span?.attributes['probe.on']).toBe(true);
    expect(span?.resource['service.name']).toBe('forgesync');
    expect(span?.traceId).toMatch(/^[0-9a-f]{32}$/);
  });

  it('exports JSON when OTEL_EXPORTER_OTLP_TRACES_PROTOCOL says http/json (over the general variable)', async () => {
    const json = await OtlpReceiver.start();
    try {
      const result = await probe({ OTEL_EXPORTER_OTLP_ENDPOINT: json.endpoint, OTEL_EXPORTER_OTLP_PROTOCOL: 'http/protobuf', OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: 'http/json' });
      expect(result.on).toBe(true);
      expect(result.loaded).toEqual(expect.arrayContaining(['@opentelemetry/exporter-trace-otlp-http']));
      expect(result.loaded).not.toContain('@opentelemetry/exporter-trace-otlp-proto');
      expect(json.contentTypes).toEqual(new Set(['application/json']));
      expect(json.spans.find((received) => received.name === 'probe')?.attributes['probe.on']).toBe(true);
    } finally {
      await json.close();
    }
  });
});
