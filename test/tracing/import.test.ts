// The spans of an import run in this process, exported to a real OTLP/HTTP
// receiver: one span per stage (named by its import and stage), and under
// them a client span per request to the (fake) GitHub API with its status.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTracing, stopTracing, withSpan } from '../../src/tracing/index.js';
import { credentialNames, startImportHarness, type ImportHarness } from '../importer/harness.js';
import { OtlpReceiver, type ReceivedSpan } from './receiver.js';

describe('traces of an import', () => {
  let receiver: OtlpReceiver;
  let h: ImportHarness | undefined;
  let outcome: string;

  beforeAll(async () => {
    receiver = await OtlpReceiver.start();
    // The SDK reads its settings from the process's environment; this test file runs in a worker of its own.
    Object.assign(process.env, {
      OTEL_EXPORTER_OTLP_ENDPOINT: receiver.endpoint,
      OTEL_SERVICE_NAME: 'forgesync-import-test',
      OTEL_BSP_SCHEDULE_DELAY: '100',
      // A small project still makes hundreds of requests: none may be dropped from the queue.
      OTEL_BSP_MAX_QUEUE_SIZE: '100000',
    });
    expect(await startTracing()).toBe(true);
    h = await startImportHarness();
    const record = await h.app.importer.create({ project: h.project, apiUrl: h.fake.apiUrl, credentials: credentialNames(1) });
    // One trace for the run, as a job's consumer span gives it when the import runs as a job.
    ({ outcome } = await withSpan('test import run', {}, () => h!.app.importer.runHere(record.name)));
    await stopTracing();
  }, 120_000);

  afterAll(async () => {
    await stopTracing();
    await h?.close();
    await receiver?.close();
  });

  it('has a span per stage and a client span per API request under them', () => {
    expect(outcome).toBe('synced');
    const root = receiver.spans.find((span) => span.name === 'test import run')!;
    expect(root, 'the run span was exported').toBeDefined();
    expect(root.resource['service.name']).toBe('forgesync-import-test');
    expect(receiver.contentTypes).toEqual(new Set(['application/x-protobuf']));

    const stages = receiver.spans.filter((span) => span.name.startsWith('import stage '));
    expect(stages.length).toBeGreaterThanOrEqual(3);
    for (const stage of stages) {
      expect(stage.traceId).toBe(root.traceId);
      expect(stage.attributes['forgesync.import']).toMatch(/./);
      expect(stage.name).toBe(`import stage ${stage.attributes['forgesync.import.stage']}`);
    }

    const apiHost = new URL(h!.fake.apiUrl).host;
    const requests = receiver.spans.filter((span) => span.kind === 3 && span.attributes['http.request.method'] === 'GET' && span.attributes['server.address'] === apiHost);
    expect(requests.length).toBeGreaterThan(10);
    const stageIds = new Set(stages.map((stage) => stage.spanId));
    const underAStage = (span: ReceivedSpan) => receiver.ancestors(span).some((ancestor) => stageIds.has(ancestor.spanId));
    // All but the budget look before the first stage happen inside one.
    expect(requests.filter(underAStage).length).toBeGreaterThan(requests.length - 3);
    expect(requests.every((span) => typeof span.attributes['url.path'] === 'string')).toBe(true);
    expect(requests.filter((span) => span.attributes['http.response.status_code'] === 200).length).toBeGreaterThan(10);
    // The deleted account's profile answers 404: its span says so.
    expect(requests.some((span) => span.attributes['http.response.status_code'] === 404 && span.attributes['error.type'] === '404')).toBe(true);
  });
});
