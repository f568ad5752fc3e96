// One trace across two processes: a signed GitHub push delivery to a
// `forgesync serve --role api` process, its sync job through BullMQ (on a
// private Redis) to a separate `--role worker` process, down to the sync's
// registry write; both processes export to a real OTLP/HTTP receiver here.
// Needs dist/ (npm run build): the processes run bin/forgesync.js.
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LOOPBACK_NETWORKS } from '../support/egress.js';
import { createTestDatabase, type TestDatabase } from '../support/harness.js';
import { testSecret } from '../support/secrets.js';
import { UpstreamFleet, WebhookSender } from '../support/cluster/fleet.js';
import { ForgesyncProcess, requireBuilt } from '../support/cluster/processes.js';
import { RedisInstance } from '../support/cluster/services.js';
import { OtlpReceiver, type ReceivedSpan } from './receiver.js';

const ADMIN_TOKEN = testSecret('TRACING_ADMIN_TOKEN');
const WEBHOOK_SECRET = testSecret('TRACING_WEBHOOK_SECRET');
const CLUSTER_TOKEN = testSecret('TRACING_CLUSTER_TOKEN');
const SERVER = 2;
const PRODUCER = 4;
const CONSUMER = 5;

describe('a trace from a webhook to the registry write, across an api and a worker process', () => {
  let root: string;
  let receiver: OtlpReceiver | undefined;
  let redis: RedisInstance | undefined;
  let database: TestDatabase | undefined;
  let fleet: UpstreamFleet | undefined;
  const processes: ForgesyncProcess[] = [];

  beforeAll(async () => {
    requireBuilt();
    root = mkdtempSync(join(tmpdir(), 'forgesync-tracing-'));
    receiver = await OtlpReceiver.start();
    redis = await RedisInstance.start();
    database = await createTestDatabase('postgres');
    fleet = await UpstreamFleet.create(join(root, 'upstreams'), 1);
  }, 60_000);

  afterAll(async () => {
    await Promise.all(processes.map((child) => child.stop()));
    await fleet?.close();
    await redis?.stop();
    await database?.drop();
    await receiver?.close();
    if (root) rmSync(root, { recursive: true, force: true });
  }, 60_000);

  it('carries the webhook’s trace through the BullMQ job to the worker’s sync spans', async () => {
    const spans = receiver!;
    const serve = (name: string, args: string[], extra: Record<string, string> = {}) => {
      const dataDir = join(root, name);
      mkdirSync(dataDir, { recursive: true });
      const env = {
        FORGESYNC_DATA_DIR: dataDir,
        FORGESYNC_DATABASE_URL: database!.url,
        FORGESYNC_LEASE_URL: redis!.url,
        FORGESYNC_JOBS_URL: `${redis!.url}/0?prefix=tracing`,
        FORGESYNC_GIT_PROTOCOLS: 'http',
        FORGESYNC_ALLOW_NETWORKS: LOOPBACK_NETWORKS,
        FORGESYNC_ADMIN_TOKEN: ADMIN_TOKEN,
        FORGESYNC_GITHUB_WEBHOOK_SECRET: WEBHOOK_SECRET,
        FORGESYNC_CLUSTER_TOKEN: CLUSTER_TOKEN,
        OTEL_EXPORTER_OTLP_ENDPOINT: spans.endpoint,
        OTEL_BSP_SCHEDULE_DELAY: '100',
        OTEL_RESOURCE_ATTRIBUTES: `test.process=${name}`,
        ...extra,
      };
      const child = new ForgesyncProcess(name, args, env, join(root, `${name}.log`));
      processes.push(child);
      return child;
    };
    // The api first: it runs the migrations.
    const apiUrl = (await serve('api', ['--role', 'api', '--port', '0', '--host', '127.0.0.1']).start())!;
    await serve('worker', ['--role', 'worker'], { FORGESYNC_SHARD: 'a' }).start();

    const added = await fetch(`${apiUrl}/api/sources`, {
      method: 'POST',
      headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
      body: JSON.stringify({ url: fleet!.url(0), name: fleet!.name(0) }),
    });
    expect(added.status, await added.clone().text()).toBe(201);
    // The first sync (the add's own trace) is done before the push, so the webhook's job is not coalesced into it.
    await spans.waitFor('the first sync’s registry write', (span) => span.name === 'registry write' && span.attributes['db.operation.name'] === 'finishSync');

    await new WebhookSender(apiUrl, WEBHOOK_SECRET).send(fleet!, 0, await fleet!.push(0));
    const webhook = await spans.waitFor('the webhook’s server span', (span) => span.kind === SERVER && span.attributes['http.route'] === '/hooks/github');
    const inTrace = (name: string, match: (span: ReceivedSpan) => boolean = () => true) =>
      spans.waitFor(`${name} in the webhook’s trace`, (span) => span.traceId === webhook.traceId && span.name === name && match(span));
    const write = await inTrace('registry write');

    // In the api process: the request, the intake, the job sent.
    expect(webhook.resource['test.process']).toBe('api');
    expect(webhook.resource['service.name']).toBe('forgesync');
    expect(webhook.attributes).toMatchObject({ 'http.request.method': 'POST', 'url.path': '/hooks/github', 'http.response.status_code': 202 });
    const intake = await inTrace('webhook github');
    expect(intake.parentSpanId).toBe(webhook.spanId);
    expect(intake.attributes).toMatchObject({ 'forgesync.webhook.provider': 'github', 'forgesync.webhook.result': 'accepted', 'forgesync.source': 'p0' });
    const sent = await inTrace('send sync@a');
    expect(sent.kind).toBe(PRODUCER);
    expect(sent.resource['test.process']).toBe('api');
    expect(sent.attributes).toMatchObject({ 'messaging.system': 'bullmq', 'messaging.destination.name': 'sync@a', 'messaging.operation.type': 'send' });
    expect(spans.ancestors(sent).map((span) => span.spanId)).toContain(intake.spanId);

    // In the worker process: the job, continuing the producer's context, and the sync under it.
    const processed = await inTrace('process sync@a');
    expect(processed.kind).toBe(CONSUMER);
    expect(processed.resource['test.process']).toBe('worker');
    expect(processed.parentSpanId).toBe(sent.spanId);
    expect(processed.attributes['messaging.message.id']).toMatch(/./);
    const sync = await inTrace('sync');
    expect(sync.parentSpanId).toBe(processed.spanId);
    expect(sync.attributes).toMatchObject({ 'forgesync.source': 'p0', 'forgesync.sync.trigger': 'webhook', 'forgesync.sync.outcome': 'synced' });
    for (const name of ['lease acquire', 'sync round', 'registry start', 'git mirror sync', 'list upstream refs', 'git fetch']) {
      const span = await inTrace(name);
      expect(span.resource['test.process'], name).toBe('worker');
      expect(spans.ancestors(span).map((ancestor) => ancestor.spanId), name).toContain(sync.spanId);
    }
    expect(write.resource['test.process']).toBe('worker');
    expect(write.attributes).toMatchObject({ 'forgesync.source': 'p0', 'db.operation.name': 'finishSync', 'db.system.name': 'postgresql' });
    // The whole chain, from the registry write up to the webhook request, one trace.
    expect(spans.ancestors(write).map((span) => span.spanId)).toEqual(expect.arrayContaining([sync.spanId, processed.spanId, sent.spanId, intake.spanId, webhook.spanId]));
  }, 120_000);
});
